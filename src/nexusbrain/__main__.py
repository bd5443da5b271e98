"""`python -m nexusbrain`: the same command line as `nexusbrain`."""

from nexusbrain.cli.main import main

main()
