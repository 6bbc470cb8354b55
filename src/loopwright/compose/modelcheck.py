"""The model names of a command line checked before anything is sent: a likely typo or another
provider's model is refused with the name that was meant (`--allow-unknown-model` sends it
anyway), a new name passes with one warning, and a money bound on a model without a price is
refused unless a token bound stands beside it."""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING, Any

from ..core.errors import UsageError
from .runspec import limit
from .render import visible

if TYPE_CHECKING:
    from .runspec import RunSpec


def check_models(opts: RunSpec, settings: Any, model: str, fallbacks: tuple[str, ...]) -> None:
    """Every model the run may call, named by where it came from."""
    main_from = ("--model" if opts.model else "ANTHROPIC_MODEL" if os.environ.get("ANTHROPIC_MODEL")
                 else "the settings' model" if settings.model else "")
    fallback_from = "--fallback-model" if opts.fallback_model else "the settings' fallbackModel"
    named = [(model, main_from), *((m, fallback_from) for m in fallbacks), (opts.goal_model, "--goal-model"),
             *([] if settings.disable_all_hooks else _prompt_hook_models(settings.hooks))]
    warned = _check_all(named, opts.allow_unknown_model)
    if model not in warned:
        _warn_if_unpriced(model)
    _budget_needs_a_price(opts, model)


def check_flag_models(opts: RunSpec) -> None:
    """The model names on the flags alone: a schedule's are checked when it is added, not at
    its first fire at 3 a.m. (the settings are read at each fire)."""
    from ..config import parse_fallbacks

    named = [(opts.model, "--model"), *((m, "--fallback-model") for m in parse_fallbacks(opts.fallback_model)),
             (opts.goal_model, "--goal-model"), (opts.classifier_model, "--classifier-model"),
             (opts.judge_model, "--judge-model")]
    _check_all(named, opts.allow_unknown_model)


def _prompt_hook_models(hooks: Any) -> list[tuple[str | None, str]]:
    """The `model` of each prompt hook, named by its key path."""
    found: list[tuple[str | None, str]] = []
    for event, groups in (hooks or {}).items():
        for g, group in enumerate(groups if isinstance(groups, list) else ()):
            for h, hook in enumerate((group.get("hooks") or ()) if isinstance(group, dict) else ()):
                if isinstance(hook, dict) and hook.get("type") == "prompt" and isinstance(hook.get("model"), str):
                    found.append((hook["model"], f"the settings' hooks.{event}[{g}].hooks[{h}].model"))
    return found


def _check_all(named: list[tuple[str | None, str]], allow: bool) -> set[str]:
    """Refuse or warn about each name; the names warned about."""
    warned = set()
    for name, origin in named:
        if name and origin and _check_one(name, origin, allow):
            warned.add(name)
    return warned


def _check_one(name: str, origin: str, allow: bool) -> bool:
    """Refuse or warn about one name; True when a warning was printed."""
    from ..policy.models import model_names, model_table_date, resolve_model
    from ..policy.names import check_model_name
    from ..providers.registry import is_default, provider_for

    # the model table is the default provider's; another provider's names are its own to check
    # (an unknown provider prefix is refused here, with the prefixes there are)
    try:
        default = is_default(name)
        if not default:
            provider_for(name)  # loaded now, so the keys it declares are kept from every child from here on
    except UsageError as error:
        raise UsageError(f"{origin}: {error}") from None
    if not default or resolve_model(name).known:
        return False
    found = check_model_name(name, model_names())
    if found is None:
        return False
    anyway = " (--allow-unknown-model sends it as given)"
    if found.kind == "typo":
        problem = f"{origin}: unknown model {name!r}; did you mean {found.meant!r}?"
    elif found.kind == "foreign":
        problem = (f"{origin}: {name!r} looks like another provider's model, and it would be sent to the Anthropic "
                   f"API; use openai:{name} for OpenAI, or openai-compatible:BASE_URL#{name} for another "
                   "OpenAI-compatible server")
    else:
        hint = f"; did you mean {found.meant!r}?" if found.meant else ""
        _warn(f"model {name!r} is not in loopwright's model table (checked {model_table_date()}); it is sent as "
              f"given, with default limits and no price: its calls count as $0 and only --max-tokens-total can "
              f"bound them{hint}")
        return True
    if not allow:
        raise UsageError(problem + anyway)
    _warn(f"{problem} — sent as given (--allow-unknown-model)")
    return True


def _warn(text: str) -> None:
    print(f"loopwright: warning: {visible(text)}", file=sys.stderr, flush=True)


def _warn_if_unpriced(model: str) -> None:
    from ..policy.models import resolve_model

    if resolve_model(model).price is None:
        _warn(f"no price is known for model {model}: its calls count as $0 in total_cost_usd and --max-budget-usd "
              "cannot bound them; --max-tokens-total can")


def _budget_needs_a_price(opts: RunSpec, model: str) -> None:
    """A money bound on a model without a price would never fire: refused, unless a token bound
    (`--max-tokens-total`) stands beside it."""
    from ..policy.models import resolve_model

    if opts.max_tokens_total or resolve_model(model).price is not None:
        return
    goal_budget = (opts.goal_max_budget_usd or "none").strip().lower() != "none"
    for flag, given in (("--max-budget-usd", limit(opts.max_budget_usd) is not None),
                        ("--goal-max-budget-usd", goal_budget)):
        if given:
            raise UsageError(f"{flag}: no price is known for model {model}, so its spend cannot be counted and this "
                             "bound would never fire; add --max-tokens-total N to bound it by tokens, or use a "
                             "model with a known price")
