"""A routine item done by a workflow, held to the item's `check:` and `protect:` as a goal's loop
is held to them: every agent of the workflow is refused writes to the protected paths (deny
rules on the session, whose rules its agents share; what a shell command writes included), and
once the workflow has answered, the harness itself compares the protected files with their
fingerprints from the item's start and runs the checks: the item is done only when both hold.
The fingerprints are recorded in the item's transcript, so a resumed item keeps counting changes
made before its process died."""

from __future__ import annotations

import dataclasses
import os
from typing import TYPE_CHECKING, Any, Sequence

from ....core.fastclass import dataclass

if TYPE_CHECKING:
    from ....agent.run import Run
    from ....tools.workspace import LocalWorkspace

CHECK_TIMEOUT_S = 300.0  # each check, as a goal's (engine.goal.GoalSpec.check_timeout_s)
GUARD = "workflow_guard"  # the attachment holding the protected files' fingerprints
VERIFIED = "workflow_checks"  # the attachment holding what the harness found at the end


@dataclass(frozen=True, slots=True)
class Verdict:
    held: bool
    why: str = ""  # what did not hold, for the item's note


def protect_rules(protect: Sequence[str]) -> tuple[str, ...]:
    """Deny rules for the protected globs, anchored where the checks read them: an absolute
    glob as it is, any other under the working directory (`Edit` rules cover every write)."""
    return tuple(f"Edit(/{p})" if os.path.isabs(p) else f"Edit(./{p.removeprefix('./')})" for p in protect)


def arm(live: Run, routine: Any, records: Sequence[Any], recorder: Any) -> dict[str, str]:
    """Deny the protected paths to the run (`live`; so to every agent of the
    workflow) and answer their fingerprints: those a resumed item recorded for the same globs,
    else taken now (and recorded)."""
    protect = list(routine.protect)
    if protect:
        rules = live.agent.permissions
        live.update(permissions=dataclasses.replace(rules, deny=(*rules.deny, *protect_rules(protect))))
    saved = _recorded(records, protect)
    if saved is not None:
        return saved
    baseline = _workspace(live).snapshot(protect) if protect else {}
    if recorder is not None:
        recorder.attach({"type": GUARD, "protect": protect, "baseline": baseline})
    return baseline


async def verify(live: Run, routine: Any, baseline: dict[str, str], recorder: Any) -> Verdict:
    """The protected files compared with `baseline` and the checks run, by the harness (in the
    Bash sandbox when it is on, as a goal's checks); what it found is recorded."""
    space = _workspace(live)
    now = space.snapshot(list(routine.protect)) if routine.protect else {}
    changed = sorted(p for p in set(baseline) | set(now) if baseline.get(p) != now.get(p))
    checks = [await space.run_check(c, CHECK_TIMEOUT_S) for c in routine.check]
    failing = [c for c in checks if not c.passed]
    if recorder is not None:
        recorder.attach({"type": VERIFIED, "held": not (changed or failing), "protected_changed": changed,
                         "checks": [{"command": c.command, "exit_code": c.exit_code, "passed": c.passed,
                                     "output_tail": c.output_tail[-500:]} for c in checks]})
    why = []
    if changed:
        why.append(f"protected files changed: {', '.join(changed)} (protected: {', '.join(routine.protect)})")
    if failing:
        why.append("its checks failed: " + "; ".join(_said(c) for c in failing))
    return Verdict(not why, "the workflow answered, but " + "; ".join(why) if why else "")


def _said(check: Any) -> str:
    status = "timed out" if check.timed_out else f"exit {check.exit_code}"
    tail = check.output_tail.strip().splitlines()[-1:] or [""]
    return f"{check.command} ({status}{': ' + tail[0][:200] if tail[0] else ''})"


def _recorded(records: Sequence[Any], protect: list[str]) -> dict[str, str] | None:
    """The fingerprints a resumed item's transcript holds for these globs (the last recorded)."""
    from ...core import attachments

    found = None
    for body in attachments(records):
        if body.get("type") == GUARD and sorted(body.get("protect") or []) == sorted(protect) and isinstance(
                body.get("baseline"), dict):
            found = {str(k): str(v) for k, v in body["baseline"].items()}
    return found


def _workspace(live: Run) -> LocalWorkspace:
    from ....tools.workspace import LocalWorkspace

    agent = live.agent
    return LocalWorkspace(agent.cwd, agent.check_wrapper(), live.child_environment())


__all__ = ["arm", "protect_rules", "verify"]
