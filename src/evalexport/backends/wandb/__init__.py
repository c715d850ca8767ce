"""Weights & Biases: the exporter, where its export goes (:mod:`.target`) and the worker
body (:mod:`.worker`)."""
