"""Masking rules of SPEC §2, pinned on the key names real evaluation configs use."""

from __future__ import annotations

import copy

import pytest
import yaml

from evalexport.masking import (
    FREE,
    MASK,
    find_unmasked_secrets,
    is_secret_key,
    mask_config,
    mask_text,
    save_run_config,
    scrub_text,
)

REAL_SECRET_KEYS = [
    "policy_api_key",
    "hf_token",
    "wandb_api_key",
    "mlflow_tracking_token",
    "openai_api_key",
    "judge_api_key",
    "anthropic_api_key",
    "nvidia_api_key",
    "bearer_token",
    "gateway_token",
    "apiKey",
    "HF_TOKEN",
    "POLICY_API_KEY",
    "Authorization",
    "accessToken",
    "basic_auth",
    "x-api-key",
    "AWS_SECRET_ACCESS_KEY",
    "apikey",
    "client_secret",
    "db.password",
    "session cookie",
    "passwd",
    "pwd",
    "ssh_key",
    "private_key",
    "signing-key",
    "credentials",
    "gcp_credential",
    "passphrase",
    "HFToken",
    "api_key_2",
    "hf_token2",
    "OPENAI_KEY",
    "NVIDIA_KEY",
    "client-key-data",
    "Proxy-Authorization",
    "Set-Cookie",
    "temporary_token",
]
REAL_NON_SECRET_KEYS = [
    "max_tokens",
    "max_output_tokens",
    "return_token_id_information",
    "tokenizer_path",
    "skip_special_tokens",
    "input_cost_per_token",
    "num_speculative_tokens",
    "key_metrics",
    "key_prefix",
    "api_key_name",
    "answer_key",
    "hf_hub_cache",
    "tokens",
    "keyboard",
    "monkey",
    "author",
    "authority",
    "token_count",
    "primary_key_column",
    # NeMo Gym's finance tools name a stored document by "key" (finance_agent_v2's
    # input_character_ranges), and deepsearchqa's pages carry "__sso_cookie_checker".
    "key",
    "key1",
    "__sso_cookie_checker",
    "credentials_file",
]


@pytest.mark.parametrize("key", REAL_SECRET_KEYS)
def test_real_credential_keys_are_secret(key: str) -> None:
    assert is_secret_key(key)


@pytest.mark.parametrize("key", REAL_NON_SECRET_KEYS)
def test_real_non_secret_keys_are_not_secret(key: str) -> None:
    assert not is_secret_key(key)


def test_every_string_under_a_secret_key_is_masked_keeping_the_shape() -> None:
    config = {"api_key": [["a", "b"], "c"], "credentials": {"user": "bob", "port": 5}}
    assert mask_config(config) == {
        "api_key": [[MASK, MASK], MASK],
        "credentials": {"user": MASK, "port": 5},
    }


def test_small_numbers_booleans_and_none_under_secret_keys_are_kept() -> None:
    config = {"hf_token": None, "api_key": 0, "client_secret": True, "bearer_token": 1.5}
    assert mask_config(config) == config
    assert mask_config({"credentials": {"port": 5432}}) == {"credentials": {"port": 5432}}


def test_a_numeric_secret_its_key_names_is_masked_in_every_copy() -> None:
    """The hostile review of #65: ``password: 13572468`` went out in clear in the saved
    config's artifact and W&B's config (its MLflow param, a text, was masked)."""
    config = {"password": 13572468, "api_key": [24681357, 7], "db": {"password": 4321}}
    assert mask_config(config) == {"password": MASK, "api_key": [MASK, 7], "db": {"password": MASK}}


@pytest.mark.parametrize(
    "value", ["${oc.env:HF_TOKEN}", "${policy.api_key}", "${oc.env:X,default}"]
)
def test_a_bare_interpolation_under_a_secret_key_is_kept(value: str) -> None:
    assert mask_config({"hf_token": value}) == {"hf_token": value}


def test_an_interpolation_with_text_around_it_is_masked() -> None:
    assert mask_config({"hf_token": "abc${oc.env:X}"}) == {"hf_token": MASK}


def test_header_maps_are_masked_by_their_own_keys() -> None:
    config = {"default_headers": {"Authorization": "Bearer abc", "X-Request-Source": "gym"}}
    assert mask_config(config) == {
        "default_headers": {"Authorization": MASK, "X-Request-Source": "gym"}
    }


@pytest.mark.parametrize(
    ("text", "masked"),
    [
        ("https://u:pw@host/p", "https://u:****@host/p"),
        ("postgresql://admin:s3cr3t@db:5432/evals", "postgresql://admin:****@db:5432/evals"),
        ("https://host/p?token=abc1&page=2", "https://host/p?token=****&page=2"),
        ("https://host/p?api_key=abc1#top", "https://host/p?api_key=****#top"),
        ("https://host/p?key_prefix=eval", "https://host/p?key_prefix=eval"),
        ("HF_TOKEN=abc123", "HF_TOKEN=****"),
        ("env HF_TOKEN=abc123 OTHER=1 python run.py", "env HF_TOKEN=**** OTHER=1 python run.py"),
        ("--hf-token=abc123 --max_tokens=5", "--hf-token=**** --max_tokens=5"),
        ("POLICY_API_KEY='a1 b2'", "POLICY_API_KEY=****"),
        ("HF_TOKEN=${oc.env:HF_TOKEN}", "HF_TOKEN=${oc.env:HF_TOKEN}"),
        ("Authorization: Bearer eyJhbGciOi.x.y", "Authorization: Bearer ****"),
        ("Bearer abc.def,ghi", "Bearer ****"),
        ("Use basic arithmetic", "Use basic arithmetic"),
        ("Use Basic arithmetic", "Use Basic arithmetic"),
        ("the bearer of good news", "the bearer of good news"),
        ("https://user:p@ss@host/", "https://user:****@host/"),
        ("https://abcdef0123456789abcd@host/x", "https://****@host/x"),
        ("https://john7@host/x", "https://****@host/x"),
        ("https://glpat0abc12345@github.com/o/r.git", "https://****@github.com/o/r.git"),
        ("https://ghp0123456789abcdefgh:x-oauth-basic@github.com", "https://****:****@github.com"),
        ("ssh://git@github.com/o/r.git", "ssh://git@github.com/o/r.git"),
        ("mail john@host.example", "mail john@host.example"),
        ("sk-learn-VISIBLE-in-the-docs", "sk-learn-VISIBLE-in-the-docs"),
        ("hf_TRANSFORMERS_cache_dir", "hf_TRANSFORMERS_cache_dir"),
        ("sk-ant-api03-abcdefghijklmnop", "sk-****"),
        ("nvapi-abcdefghijklmnopqrstuv", "nvapi-****"),
        ("--hf-token hfsecretvalue1 --max-tokens 100", "--hf-token **** --max-tokens 100"),
        ('{"api_key": "abc123", "model": "m"}', '{"api_key": "****", "model": "m"}'),
        ("api_key: abc123\nmodel: m", "api_key: ****\nmodel: m"),
        ("X-Api-Key: v4lue", "X-Api-Key: ****"),
        ("OPENAI_KEY=abc123456", "OPENAI_KEY=****"),
        ("Note: see the docs", "Note: see the docs"),
        ("key sk-proj-abcdefghijklmnop1234", "key sk-****"),
        ("hf_abcdefghijklmnopqrstuvwxyz", "hf_****"),
        ("ghp_abcdefghijklmnopqrstuvwxyz0123", "ghp_****"),
        ("github_pat_11ABCDEFG0123456789_abcdef", "github_pat_****"),
        ("glpat-abcdefghij0123456789", "glpat-****"),
        ("xoxb-1234-5678-abcdefghijkl", "xoxb-****"),
        ("AKIAIOSFODNN7EXAMPLE", "AKIA****"),
        ("hf_hub_cache", "hf_hub_cache"),
        ("/data/hf_hub_cache/models", "/data/hf_hub_cache/models"),
        ("task-abcdefghijklmnopqrstuvwx", "task-abcdefghijklmnopqrstuvwx"),
        ("sk-short", "sk-short"),
        ("https://integrate.api.nvidia.com/v1", "https://integrate.api.nvidia.com/v1"),
    ],
)
def test_secrets_are_masked_by_their_shape_whatever_the_key(text: str, masked: str) -> None:
    assert mask_text(text) == masked
    assert mask_config({"notes": text}) == {"notes": masked}


def test_mask_config_does_not_mutate_its_input() -> None:
    config = {"hf_token": "abc", "nested": {"api_key": ["x"]}, "url": "https://u:p@h/"}
    original = copy.deepcopy(config)
    mask_config(config)
    assert config == original


def test_find_unmasked_secrets_names_each_live_secret_by_path() -> None:
    config = {"hf_token": "abc123", "judge": {"urls": ["https://u:p@h/"]}, "max_tokens": 5}
    assert find_unmasked_secrets(config) == ["hf_token", "judge.urls[0]"]
    assert find_unmasked_secrets(mask_config(config)) == []


@pytest.mark.parametrize("placeholder", ["dummy", "EMPTY", "none", "None", "", "changeme"])
def test_a_placeholder_under_a_secret_key_is_masked_but_no_live_secret_to_warn_of(
    placeholder: str,
) -> None:
    """NeMo Gym's ``gym eval submit`` writes ``policy_api_key: dummy``: it is masked as every
    value under a secret key is, and no note calls it a live secret (#59)."""
    config = {"policy_api_key": placeholder, "judge": {"api_key": "sk-live0123456789abcd"}}
    assert mask_config(config)["policy_api_key"] == MASK
    assert find_unmasked_secrets(config) == ["judge.api_key"]


def test_save_run_config_writes_masked_unresolved_yaml_beside_the_rollouts(tmp_path) -> None:
    rollouts = tmp_path / "aime24_rollouts.jsonl"
    config = {"hf_token": "live-secret-value", "HF_TOKEN": "${oc.env:HF_TOKEN}", "max_tokens": 8}
    path = save_run_config(config, rollouts)
    assert path == tmp_path / "aime24_rollouts_resolved_config.yaml"
    text = path.read_text()
    assert "live-secret-value" not in text
    assert yaml.safe_load(text) == {
        "hf_token": MASK,
        "HF_TOKEN": "${oc.env:HF_TOKEN}",
        "max_tokens": 8,
    }
    assert [p.name for p in tmp_path.iterdir()] == [path.name]


def test_save_run_config_refuses_a_value_yaml_cannot_carry_naming_its_path(tmp_path) -> None:
    with pytest.raises(TypeError, match=r"judge\.scorer is a builtin_function_or_method"):
        save_run_config({"judge": {"scorer": len}}, tmp_path / "r.jsonl")
    assert list(tmp_path.iterdir()) == []


def test_the_working_directory_variable_is_not_a_secret(monkeypatch, tmp_path) -> None:
    monkeypatch.setenv("PWD", str(tmp_path))
    assert scrub_text(f"wrote {tmp_path}/mlruns.db") == f"wrote {tmp_path}/mlruns.db"


def test_scrub_text_removes_values_of_secret_named_environment_variables(monkeypatch) -> None:
    monkeypatch.setenv("EVALRDL_TOKEN", "plain-looking-value-123")
    monkeypatch.setenv("SHORT_TOKEN", "abc")
    assert scrub_text("failed with plain-looking-value-123 and abc") == "failed with **** and abc"


@pytest.mark.parametrize("length", [2, 5, 13, 40])
def test_a_user_part_of_a_url_that_looks_like_a_token_is_masked_whatever_its_length(
    length: int,
) -> None:
    token = ("a1" * length)[:length]
    masked = mask_config({"repo_url": f"https://{token}@github.com/o/r.git"})
    assert masked == {"repo_url": "https://****@github.com/o/r.git"}


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("abstention_token", "[IDK]"),
        ("eos_token", "</s>"),
        ("bos_token", "<|begin_of_text|>"),
        ("think_end_token", "</think>"),
    ],
)
def test_a_vocabulary_marker_under_a_token_key_is_kept(key: str, value: str) -> None:
    assert mask_config({key: value}) == {key: value}
    assert mask_config({key: [value, "live123"]}) == {key: [value, MASK]}
    assert find_unmasked_secrets({key: value}) == []


@pytest.mark.parametrize(
    ("key", "value"),
    [("hf_token", "[abc def]"), ("hf_token", "hf-live-value"), ("password", "<secret>")],
)
def test_values_that_are_no_vocabulary_marker_stay_masked(key: str, value: str) -> None:
    assert mask_config({key: value}) == {key: MASK}


# Texts that made some rule backtrack over the whole text from every position it tried.
ADVERSARIAL_MOTIFS = [
    "p",
    "a:",
    "a.",
    "sk-",
    "http://",
    "https://u:",
    ";",
    "?",
    "&a",
    "a=",
    '"a":"',
    "'a': '",
    "-a ",
    "--a ",
    "Bearer ",
    "Basic a",
    "authorization: ",
    "a@",
    ":",
    " ",
    "\t",
    "\n",
    "\r\n",
    "[",
    "<",
    "${",
    "x" * 100 + " ",
    # A secret's name before each value: each value runs into the next name (#65).
    "token=x",
    "?token=x",
    "password: x",
    '"token": "x',
    "--token x",
    "a\nkey: v ",
    "x@",
]
ADVERSARIAL_TEXTS = [
    *(motif * (1_000_000 // len(motif)) for motif in ADVERSARIAL_MOTIFS),
    "a: x" + " " * 1_000_000 + "y",
    "https://" + "a" * 1_000_000,
    "https://u:" + "b" * 1_000_000,
    '"' + "a" * 1_000_000,
    "api_key: " + "v " * 500_000 + "\r\nmodel: m",
    # A host and a port that a mark ends, again and again after one password (#65's port rule
    # looked to the next space from each: quadratic).
    "http://u:p" + "@h:1," * 200_000,
    # One run of name characters holding an anchor every few bytes (a hostile trial's): each
    # anchor read the name to the run's end, and the vocabulary's pattern cost the cube of it.
    "token_" * 170_000,
    "password_" * 110_000,
]


@pytest.mark.long
def test_masking_a_megabyte_of_any_shape_does_not_hang(tmp_path) -> None:
    """Masking is linear in the text: a 1 MB value of any shape masks in about a second (see
    benchmarks/masking.py for the figures). The subprocess's limit is a hang guard, 30x that:
    a rule that backtracks quadratically takes hours on these texts."""
    import json
    import subprocess
    import sys

    texts = tmp_path / "texts.json"
    texts.write_text(json.dumps(ADVERSARIAL_TEXTS))
    code = (
        "import json, sys; from evalexport.masking import mask_config, mask_value\n"
        "for text in json.load(open(sys.argv[1])):\n"
        "    mask_config({'prompt': text}); mask_value(text, kind='free')"
    )
    subprocess.run([sys.executable, "-c", code, str(texts)], check=True, timeout=120)


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("hf_token", "<hf_AbCd0123456789xyz>"),
        ("access_token", "[ghp_abc1234567890]"),
        ("access_token", "[plainword]"),
        ("eos_token", "<sk-proj-abcdefghijklmnopqrstuvwx>"),
        ("pad_token", "[a1b2c3d4e5]"),
    ],
)
def test_a_bracketed_secret_under_a_token_key_is_masked(key: str, value: str) -> None:
    assert mask_config({key: value}) == {key: "****"}


@pytest.mark.parametrize(
    ("key", "value"),
    [("abstention_token", "[IDK]"), ("eos_token", "</s>"), ("pad_token", "<|eot_id|>")],
)
def test_a_vocabulary_marker_under_a_vocabulary_key_is_kept(key: str, value: str) -> None:
    assert mask_config({key: value}) == {key: value}


@pytest.mark.parametrize(
    ("url", "masked"),
    [
        ("postgresql://admin:Ab/cd+ef==@db:5432/x", "postgresql://admin:****@db:5432/x"),
        ("https://u:p?q#r@host/p", "https://u:****@host/p"),
        ("https://u:p@ss@host/x", "https://u:****@host/x"),
        ("redis://:se/cret@cache:6379", "redis://:****@cache:6379"),
    ],
)
def test_a_url_password_holding_a_slash_a_question_mark_or_a_hash_is_masked(
    url: str, masked: str
) -> None:
    assert mask_text(url) == masked


def test_a_port_before_a_scoped_path_is_no_password() -> None:
    assert mask_text("http://host:4873/@scope/pkg") == "http://host:4873/@scope/pkg"


@pytest.mark.parametrize(
    "usage", ["takes +key=value options", "set HF_TOKEN=... first", "api_key=VALUE"]
)
def test_a_usage_texts_placeholder_is_no_secret(usage: str) -> None:
    assert mask_text(usage) == usage


@pytest.mark.parametrize(
    "text",
    [
        "divided by $1000$.policy_api_key=canary-policy-0123456789abcdef",
        "in 1000.api_key=canary-judge-0123456789abcdef",
        "(see note).hf_token=canary-hf-0123456789abcdef",
    ],
)
def test_an_assignment_glued_to_a_sentences_end_is_masked(text: str) -> None:
    """A prompt that runs a key's assignment into the sentence before it (no space after the
    period) still has its secret masked."""
    masked = mask_text(text)
    assert "canary-" not in masked
    assert masked.endswith("=****")


def test_a_dotted_name_that_is_no_secret_keeps_its_value() -> None:
    assert mask_text("version 1.2.token_count=5") == "version 1.2.token_count=5"


@pytest.mark.parametrize(
    ("text", "masked"),
    [
        (
            "Cannot reach 'https://host/v1?api_key=abc123def&x=1' (timed out)",
            "Cannot reach 'https://host/v1?api_key=****&x=1' (timed out)",
        ),
        (
            "Cannot reach 'https://host/v1?api_key=abc123def'",
            "Cannot reach 'https://host/v1?api_key=****'",
        ),
        ('run with "--api-key abc123def"', 'run with "--api-key ****"'),
        ("run with --api-key 'abc123def'", "run with --api-key '****'"),
    ],
)
def test_a_masked_value_keeps_the_quote_that_closes_it(text: str, masked: str) -> None:
    """A message quoting a URL or a command keeps its closing quote once the secret in it is
    masked (#56: ``…?api_key=****`` lost its ``'``)."""
    assert mask_text(text) == masked


def test_code_and_prose_of_nemo_gyms_rows_are_left_as_they_are() -> None:
    """Texts from the example rows of nemo-gym 0.7.0's wheel that name secrets without holding
    one (code, prose, placeholders): in a row (free text) a secret must look like one (#56,
    #65; a saved config's strings are structured text, read by the names)."""
    kept = [
        "        password: Optional[str] = None,",
        "client_cert=None, client_key=None, cookies=None, use_gssapi=False",
        "aws_secret_access_key=aws_secret_access_key,",
        "WHERE seller_token=$1 AND status='available'",
        "- name: Test Bearer authorization is failed",
        '      Authorization: "Bearer {{ my_token }}"',
        "https://dberenbaum:<token>@github.com/o/r",
        "for an SSH URL like 'ssh://git@github.com/o/r.git'",
        '"@context":"https://schema.org","@type":"WebPage"',
        "?__sso_cookie_checker=failed",
        '[{"key": "financial_report", "start": 1}]',
        "    ✓ Basic (1 ms)",
        "# Test 1: Basic floating-point array",
        'MasterUserPassword="password",',
        'credential="<access_key>")',
    ]
    for text in kept:
        assert mask_text(text, FREE) == text, text


@pytest.mark.parametrize(
    ("line", "shaped"),
    [
        # a log line that opens as JSON does, its secret outside any JSON string (#65, found
        # by a hostile trial: the JSON text's reading passed it)
        ('[2024-06-01 12:00:00] connecting "db" with password="hunter2"', True),
        ('{"a":"b"}password: "Xk9fQ2mZ7pLw4RtY"', True),
        ('"db" password="Xk9fQ2mZ7pLw4RtY"', True),
        ('{"api_key": "sk-abcdefghijklmnopqrstuvwx"}', True),  # JSON, read as JSON
        ('[INFO] "db" connected with the key step done', False),  # a look-alike
        ('{"output_tokens": 5, "eos_token": "</s>"}', False),
    ],
)
def test_a_directory_scan_reads_a_line_as_json_only_once_it_parses(
    tmp_path, line: str, shaped: bool
) -> None:
    from evalexport.egress.gate import SecretScan

    path = tmp_path / "run.log"
    path.write_text(line + "\nall went well\n")
    scan = SecretScan()
    with path.open("rb") as handle:
        scan.read(path, handle)
    assert scan.found == ({path: 1} if shaped else {})
