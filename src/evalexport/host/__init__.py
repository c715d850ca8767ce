"""What evalexport asks of the machine it runs on: files opened and written safely, locks
across processes, its cache directory, and a standard output that holds a command's result
alone. Standard library (and platformdirs) only; nothing of evalexport's below it."""
