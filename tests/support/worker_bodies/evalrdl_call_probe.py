"""Worker body for differential tests: make each call on the installed evalrdl and report how
it ended (returned, or the class of what it raised). Stdlib + evalrdl."""


def run(payload):
    import evalrdl
    from evalrdl.sdk.api import upload_plan

    outcomes = []
    for call in payload["calls"]:
        try:
            if call["target"] == "evalrdl.Client":
                evalrdl.Client(*call["args"], **call["kwargs"])
            elif call["target"] == "evalrdl.sdk.api.upload_plan":
                upload_plan(*call["args"], **call["kwargs"])
            else:
                evalrdl.Client().uploads.upload(*call["args"], **call["kwargs"])
            outcomes.append("returned")
        except Exception as error:  # the outcome is the point
            outcomes.append(f"raised {type(error).__module__}.{type(error).__qualname__}")
    return {
        "status": "succeeded",
        "exit_code": 0,
        "message": "probed",
        "details": {"outcomes": outcomes},
    }
