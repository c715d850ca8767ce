"""The tables a tracking export uploads beside the run, written in its one read: NeMo Gym's
rollouts table (:mod:`.rollouts`), the typed samples table (:mod:`.samples`), a big file read
on two cores (:mod:`.split_read`), and :func:`.prepare.prepare`, which reads the run with them.
Public: a plugin uploads the same tables with the same calls as the built-ins."""
