"""The core every process shares: the queue, runs, the database and its migrations, states
and verdicts, settings, retries, errors and the flow of task kinds. It imports no other
folder of citerun (an import-linter contract holds it)."""
