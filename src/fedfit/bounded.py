"""Bounded input: size caps on files a user hands fedfit, and YAML whose aliases cannot blow up.

A few hundred bytes of YAML can name a structure of billions of nodes through nested aliases
("billion laughs"); fedfit composes the document first, counts the nodes it would expand to
(each alias counted at its full size, without expanding anything), and refuses it past
:data:`MAX_YAML_NODES` before a single Python object is built. Files are read at most
``max_bytes + 1`` bytes, so a 50 MB config is refused without being read.

Every refusal is a :class:`~fedfit.errors.ConfigError` of one line naming the file.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from fedfit.errors import ConfigError

if TYPE_CHECKING:  # PyYAML is imported where a document is read: a run from a dict config never loads it
    import yaml

#: Largest config file accepted (bytes); ``FEDFIT_MAX_CONFIG_BYTES`` overrides it for ``fedfit``.
MAX_CONFIG_BYTES = 1 << 20
#: Largest CSV trace accepted (bytes); ``fleet.max_trace_bytes`` overrides it.
MAX_TRACE_BYTES = 64 << 20
#: Most YAML nodes a document may expand to, aliases counted at their full size.
MAX_YAML_NODES = 100_000


def read_text(path: Path, max_bytes: int, what: str) -> str:
    """The UTF-8 text of ``path``, refusing a file over ``max_bytes``.

    Raises:
        ConfigError: missing, unreadable, too large or not UTF-8 (``what`` names it: "config").
    """
    try:
        with path.open("rb") as f:
            data = f.read(max_bytes + 1)
    except FileNotFoundError:
        raise ConfigError(f"{what}: file not found: {path}") from None
    except OSError as err:
        raise ConfigError(f"{what}: cannot read {path} ({err.strerror})") from None
    if len(data) > max_bytes:
        raise ConfigError(f"{what}: {path} is larger than the {max_bytes}-byte limit")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise ConfigError(f"{what}: {path} is not UTF-8 text (byte {err.start})") from None


def load_yaml(text: str, source: str, max_nodes: int = MAX_YAML_NODES) -> Any:
    """``yaml.safe_load(text)``, refusing documents that expand to more than ``max_nodes`` nodes.

    Raises:
        ConfigError: invalid YAML, several documents, or too many nodes once aliases expand.
    """
    import yaml  # noqa: PLC0415 - see the module's imports

    loader = yaml.SafeLoader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        size = expanded_size(node, {}, max_nodes)
        if size > max_nodes:
            raise ConfigError(f"config: {source} expands to more than {max_nodes} YAML nodes "
                              "(aliases nested too deep?)")
        return loader.construct_document(node)
    except yaml.YAMLError as err:
        raise ConfigError(f"config: {source} is not valid YAML: {str(err).splitlines()[0]}") from None
    except RecursionError:
        raise ConfigError(f"config: {source} is nested too deeply") from None
    finally:
        loader.dispose()


def expanded_size(node: yaml.Node, sizes: dict[int, int], cap: int) -> int:
    """Nodes under ``node`` once every alias is expanded (shared nodes counted at each use).

    ``sizes`` memoises by node identity, so the count costs one pass over the composed graph
    however large the expansion; counting stops a little past ``cap``.

    >>> import yaml
    >>> expanded_size(yaml.compose("a: &x [1, 2]\\nb: [*x, *x]"), {}, 100)
    13
    """
    import yaml  # noqa: PLC0415 - see the module's imports

    key = id(node)
    if key in sizes:
        return sizes[key]
    sizes[key] = cap + 1  # a cycle (recursive alias) counts as too large
    total = 1
    if isinstance(node, yaml.SequenceNode):
        children: list[yaml.Node] = list(node.value)
    elif isinstance(node, yaml.MappingNode):
        children = [part for pair in node.value for part in pair]
    else:
        children = []
    for child in children:
        total += expanded_size(child, sizes, cap)
        if total > cap:
            break
    sizes[key] = total
    return total
