"""ocmem: long-term memory for the OpenCode agent.

The library never imports click; ``ocmem.cli.commands`` is the only command-line boundary.
"""

__version__ = "0.1.0"
