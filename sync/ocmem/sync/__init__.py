"""SilverBullet sync: AGENTS.md, MEMORY.md and skills/ pulled; journal and proposals pushed.

``client`` (the ``/.fs`` HTTP client and its write guard), ``config`` (the ``silverbullet:``
settings and the token), ``state`` (what was last seen), ``merge`` (the pure block merge),
``pull`` and ``push`` (each a pure plan and its executor), ``history`` (local git history of the
pulled files), ``run`` (the locked runs the CLI calls). Nothing here is imported by the local
commands (the package itself imports nothing, so ``ocmem.sync.config`` stays cheap).
"""
