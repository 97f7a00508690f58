"""The secrets a run is granted when it starts, resumes or executes a branch elsewhere:
the values of its LWIR's `permissions.secrets`, from the broker of the call or process
that executes it (lwtool.capability.secrets: the environment, `--secrets FILE`, the
API's `secrets=`)."""

from __future__ import annotations

from typing import Any

from lwtool.capability.secrets import SecretMissing, current_broker
from lwtool.record.errors import RunFailedError


def run_secrets(family: list[dict[str, Any]], run_id: str | None, version_id: str
                ) -> dict[str, str]:
    """The values of the secrets a run of the first LWIR (and the children it reaches,
    the rest of `family`) declares in permissions.secrets, from the current broker
    (lwtool.capability.secrets); a name it lacks is refused before anything is written,
    naming it. A child run reads its own from the same broker when it starts."""
    names = {str(n) for d in family for n in (d.get("permissions") or {}).get("secrets") or ()}
    if not names:
        return {}
    own = {str(n) for n in (family[0].get("permissions") or {}).get("secrets") or ()}
    try:
        found = current_broker().resolve(names)
    except SecretMissing as exc:
        raise RunFailedError(run_id or "(not started)", version_id, "runtime_config_error",
                             f"{exc} (the workflow's permissions.secrets, or a "
                             "child's it invokes, lists it)") from None
    return {n: v for n, v in found.items() if n in own}
