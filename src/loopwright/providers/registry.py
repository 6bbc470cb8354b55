"""The table of model providers: the prefix of a model name (`openai` in `openai:gpt-5`) names
the provider that serves it, and a name without one goes to Anthropic's Messages API. The
router, the CLI's model-name checks, the goal's default evaluator and telemetry all read this
one table, so a provider added here (`register`, or a package's `loopwright.providers` entry
point) is served and checked like the built-in ones.

Start-up stays lazy: the built-in providers are named by module and loaded (with httpx) when a
name of theirs first needs a client; the entry points are read only when a name carries a
prefix nobody registered."""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable, Mapping
import dataclasses
from dataclasses import dataclass
from typing import TYPE_CHECKING, Union

from ..core.environ import withhold
from ..core.errors import UsageError

if TYPE_CHECKING:
    from ..core.ports import Model

__all__ = ["ENTRY_POINT_GROUP", "Provider", "known_prefixes", "prefix_of", "provider_for", "register", "unregister"]

ENTRY_POINT_GROUP = "loopwright.providers"
DEFAULT = ""  # the table's key for names without a prefix

# A prefix is a word before the name's first colon. No dots: a Bedrock-style id such as
# `us.anthropic.claude-…-v1:0` has none and stays the default provider's.
_PREFIX = re.compile(r"[A-Za-z][A-Za-z0-9_-]*")

ModelFactory = Callable[[str, Mapping[str, str], Mapping[str, str]], "Model"]


@dataclass(frozen=True)
class Provider:
    """How the names of one prefix are served.

    `factory(name, env, origins)` makes the client (a `Model`) for the model name `name`: `env`
    is the environment to read keys and URLs from, `origins` maps a variable to the settings file
    that set it (for error messages), mostly empty. It raises `UsageError` for a name it cannot
    serve or a missing key, before any run starts. The client gets each request with the full
    name in `request.model` (`model_id` strips the prefix).

    `client_key(name, env)`: names with equal keys share one client (one connection pool); None
    (the default) makes one client for every name of the prefix. `system`: the provider as
    telemetry names it (`gen_ai.system`); empty, the prefix. `credentials`: the variables it
    reads keys from, kept from every process the model's tools and the hooks start, as the
    built-in providers' keys are (core.environ)."""

    factory: ModelFactory
    system: str = ""
    client_key: Callable[[str, Mapping[str, str]], str] | None = None
    model_id: Callable[[str], str] | None = None
    credentials: tuple[str, ...] = ()

    def id_of(self, name: str) -> str:
        """What the provider's server is asked for: by default the name after its prefix."""
        if self.model_id is not None:
            return self.model_id(name)
        prefix = prefix_of(name)
        return name[len(prefix) + 1:] if prefix is not None else name


# prefix -> the provider, or "module:attribute" where it is, loaded on first use
_Entry = Union[Provider, str]
_BUILTIN: dict[str, _Entry] = {
    DEFAULT: "loopwright.providers.anthropic:PROVIDER",
    "openai": "loopwright.providers.openai:OPENAI",
    "openai-compatible": "loopwright.providers.openai:OPENAI_COMPATIBLE",
}
_table: dict[str, _Entry] = dict(_BUILTIN)


def prefix_of(name: str) -> str | None:
    """The provider prefix a model name carries (`openai` for `openai:gpt-5`), else None."""
    head, colon, _ = name.partition(":")
    return head if colon and _PREFIX.fullmatch(head) else None


def register(prefix: str, provider: Provider | ModelFactory, *, replace: bool = False) -> None:
    """Serve the model names `PREFIX:…` with `provider` (a `Provider`, or just its factory).
    A prefix already in the table is refused unless `replace` is given: a plug-in must not take
    over `openai:` (and with it the OpenAI key) by being installed."""
    key = _checked_prefix(prefix)
    if key in _table and not replace:
        raise UsageError(f"model provider prefix {key + ':'!r} is already registered; pass replace=True to replace it")
    _table[key] = _as_provider(provider, key, f"the provider registered for {key + ':'!r}")


def unregister(prefix: str) -> None:
    """Forget a registered prefix; a built-in one comes back as it was."""
    key = _checked_prefix(prefix)
    if key in _BUILTIN:
        _table[key] = _BUILTIN[key]
    else:
        _table.pop(key, None)


def known_prefixes() -> list[str]:
    """Every prefix registered, the installed packages' entry points included (this reads them)."""
    _read_entry_points()
    return sorted(p for p in _table if p != DEFAULT)


def table_key(name: str) -> str:
    """The table's key for a model name: its prefix, or `DEFAULT`. A prefix nobody registered is
    looked for among the entry points, then refused with the prefixes there are."""
    prefix = prefix_of(name)
    if prefix is None:
        return DEFAULT
    if prefix not in _table:
        _read_entry_points()
    if prefix not in _table:
        known = ", ".join(f"{p}:" for p in known_prefixes())
        raise UsageError(f"model {name!r}: no provider serves the prefix {prefix + ':'!r}; the known prefixes are "
                         f"{known} (a name without a prefix goes to the Anthropic API). A provider is added with "
                         f"loopwright.providers.register() or the entry-point group {ENTRY_POINT_GROUP!r}")
    return prefix


def is_default(name: str) -> bool:
    """Whether a model name goes to the default provider (Anthropic), whose model table applies."""
    return table_key(name) == DEFAULT


def provider_for(name: str) -> Provider:
    """The provider serving a model name, loaded now if it was only named."""
    key = table_key(name)
    entry = _table[key]
    if isinstance(entry, str):
        entry = _table[key] = _as_provider(_load(entry), key, entry)
    return entry


def _withheld(provider: Provider) -> Provider:
    """`provider`, its keys kept from children from now on (before its factory can read one)."""
    if isinstance(provider.credentials, str) or not all(isinstance(c, str) for c in provider.credentials):
        raise UsageError(f"model provider {provider.system!r}: credentials must be a tuple of variable names, "
                         f"got {provider.credentials!r}")
    withhold(provider.credentials)
    return provider


def _checked_prefix(prefix: str) -> str:
    key = prefix[:-1] if isinstance(prefix, str) and prefix.endswith(":") else prefix
    if not isinstance(key, str) or not _PREFIX.fullmatch(key) or key != key.lower():
        raise UsageError(f"model provider prefix {prefix!r}: expected a lower-case word such as 'myprefix' "
                         "(letters, digits, '-' and '_'), which model names then start with ('myprefix:model')")
    return key


def _as_provider(found: object, prefix: str, origin: str) -> Provider:
    if isinstance(found, Provider):
        return _withheld(found if found.system else dataclasses.replace(found, system=prefix or "anthropic"))
    if callable(found):
        return Provider(factory=found, system=prefix)
    raise UsageError(f"{origin}: expected a loopwright.providers.Provider or a factory "
                     f"(name, env, origins) -> Model, got {type(found).__name__}")


def _load(ref: str) -> object:
    """The object `module:attribute` names (an entry point's value, extras aside)."""
    module, _, attribute = ref.partition("[")[0].strip().partition(":")
    try:
        found: object = importlib.import_module(module.strip())
        for part in attribute.strip().split(".") if attribute.strip() else ():
            found = getattr(found, part)
    except (ImportError, AttributeError) as error:
        raise UsageError(f"model provider {ref!r} cannot be loaded: {error}") from error
    return found


def _read_entry_points() -> None:
    """Name each installed package's provider (not loaded yet: that is done on first use). One
    already in the table keeps its place: an installed package never displaces a built-in or a
    registered provider."""
    from importlib.metadata import entry_points

    for point in entry_points(group=ENTRY_POINT_GROUP):
        try:
            key = _checked_prefix(point.name)
        except UsageError as error:
            raise UsageError(f"entry point {point.name!r} = {point.value!r} in group {ENTRY_POINT_GROUP!r}: "
                             f"{error}") from None
        if key not in _table:
            _table[key] = point.value
