"""ATIF trajectory files, and everything an ATIF export does with files: the exporter
(:mod:`.exporter`, no SDK), a whole rollouts file converted and written (:mod:`.files`, in a
process pool (:mod:`.pool_workers`) or one process; :mod:`.file_outcome`), the manifest and the
staged output's check (:mod:`.manifest`), and the staging directory (:mod:`.staging`). One
row's conversion to a trajectory, which touches no file, is :mod:`evalexport.trajectory`'s."""
