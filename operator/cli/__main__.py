"""``python -m cdcflow.operator.cli`` runs the same command line as ``cdcflow``."""

from cdcflow.operator.cli.main import main

main()
