"""MLflow: the exporter, where its export goes (:mod:`.target`), Gym's names for MLflow
(:mod:`.names`), rollouts as traces (:mod:`.traces`) and the worker body (:mod:`.worker`)."""
