"""EvalRDL: the exporter and the worker body (:mod:`.worker`)."""
