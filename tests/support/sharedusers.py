"""The tests that set the hardened mode up share two real Unix users (``ocmem-e2e``,
``ocmem-e2e-agent``) and their one sudoers file: under pytest-xdist (``--dist loadgroup``) they
run on one worker, one after the other."""

from __future__ import annotations

import pytest

SHARED_USERS = pytest.mark.xdist_group("hardened-users")
