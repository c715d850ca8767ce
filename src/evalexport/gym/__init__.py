"""NeMo Gym's own files around a run's rollouts, read as Gym writes them.

- :mod:`~evalexport.gym.jobs`: a ``gym eval submit`` job directory (``gym-job.json``, its
  ``resolved-config.yaml``, a run per benchmark);
- :mod:`~evalexport.gym.health`: the rollout health reports ``gym eval run`` writes beside the
  rollouts, and the failed attempts rollout collection records;
- :mod:`~evalexport.gym.identity`: how Gym names a rollout (its key and id).

Below :mod:`evalexport.reading` and :mod:`evalexport.run`, which use them: these modules read
files and nothing else (no masking: what they hold is masked where it leaves).
"""
