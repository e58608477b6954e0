"""The graph's text form (one line per node) and its graphviz DOT source.

Text form::

    graph(%x: (1, 64) float32) {
      %w1 = constant (128, 64) float32
      %0 = nn.dense(%x, %w1) : (1, 128) float32            # group 0, OUT_ELEMWISE_FUSABLE
      %1 = nn.relu(%0) : (1, 128) float32                  # group 0, ELEMWISE
      return %1
    }
"""

from __future__ import annotations

from typing import Any

from mlc.graph.ir import Call, Constant, Graph, Node, Var


def _attr_str(v: Any) -> str:
    return repr(v) if isinstance(v, str) else str(v)


def node_names(g: Graph) -> dict[Node, str]:
    """A stable printed name per node: inputs by name, constants by name or ``%cN``, calls
    ``%0, %1, ...`` in topological order."""
    names: dict[Node, str] = {}
    used: set[str] = set()
    nc = ncall = 0
    for n in g.topo():
        if isinstance(n, Var):
            name = f"%{n.name}"
        elif isinstance(n, Constant):
            base = n.name or f"c{nc}"
            nc += 1
            name = f"%{base}"
            k = 1
            while name in used:
                name = f"%{base}_{k}"
                k += 1
        else:
            name = f"%{ncall}"
            ncall += 1
        used.add(name)
        names[n] = name
    return names


def graph_to_str(g: Graph) -> str:
    names = node_names(g)
    group = g.group_of()
    params = ", ".join(f"{names[v]}: {v.type}" for v in g.inputs)
    lines = [f"graph({params}) {{"]
    for n in g.topo():
        if isinstance(n, Var):
            continue
        if isinstance(n, Constant):
            lines.append(f"  {names[n]} = constant {n.type}")
            continue
        assert isinstance(n, Call)
        args = ", ".join(names[a] for a in n.args)
        attrs = "".join(f", {k}={_attr_str(v)}" for k, v in n.attrs.items() if v is not None)
        text = f"  {names[n]} = {n.op.name}({args}{attrs}) : {n.type}"
        note = n.op.pattern.name
        if n in group:
            note = f"group {group[n]}, {note}"
        lines.append(f"{text:<60} # {note}")
    outs = ", ".join(names[o] for o in g.outputs)
    lines.append(f"  return {outs}")
    lines.append("}")
    if g.memory is not None:
        lines.append(f"# {g.memory}")
    return "\n".join(lines)


def _q(s: str) -> str:
    """A DOT string literal; real newlines become DOT's ``\\n`` line breaks."""
    body = s.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return '"' + body + '"'


def graph_to_dot(g: Graph, name: str = "mlc_graph") -> str:
    """DOT source. Each op node carries attributes ``op``, ``shape``, ``pattern`` and ``group``
    (the fused group id, or -1); fused groups are drawn as ``subgraph cluster_<gid>``."""
    names = node_names(g)
    group = g.group_of()
    ids = {n: f"n{i}" for i, n in enumerate(g.topo())}
    lines = [f"digraph {_q(name)} {{", "  rankdir=TB;",
             '  node [shape=box, style="rounded,filled", fillcolor=white, fontname="Helvetica"];']

    def decl(n: Node) -> str:
        if isinstance(n, Var):
            label = f"{n.name}\n{n.shape}"
            return (f"{ids[n]} [label={_q(label)}, op=input, tensor_shape=\"{n.shape}\", "
                    f"pattern=INPUT, group=-1, fillcolor=lightblue, shape=ellipse];")
        if isinstance(n, Constant):
            label = f"{names[n][1:]}\n{n.shape}"
            return (f"{ids[n]} [label={_q(label)}, op=constant, tensor_shape=\"{n.shape}\", "
                    f"pattern=CONSTANT, group=-1, fillcolor=lightgrey, shape=note];")
        assert isinstance(n, Call)
        gid = group.get(n, -1)
        label = f"{names[n]} {n.op.name}\n{n.shape}\n{n.op.pattern.name}"
        return (f"{ids[n]} [label={_q(label)}, op={_q(n.op.name)}, tensor_shape=\"{n.shape}\", "
                f"pattern={n.op.pattern.name}, group={gid}];")

    clustered: dict[int, list[Node]] = {}
    for n in g.topo():
        if n in group:
            clustered.setdefault(group[n], []).append(n)
        else:
            lines.append("  " + decl(n))
    for gid, members in sorted(clustered.items()):
        lines.append(f"  subgraph cluster_{gid} {{")
        lines.append(f'    label="group {gid}"; style=dashed; color=darkorange;')
        for n in members:
            lines.append("    " + decl(n))
        lines.append("  }")
    for n in g.topo():
        if isinstance(n, Call):
            for a in n.args:
                lines.append(f"  {ids[a]} -> {ids[n]};")
    for i, o in enumerate(g.outputs):
        lines.append(f'  out{i} [label="output {i}", shape=plaintext];')
        lines.append(f"  {ids[o]} -> out{i};")
    lines.append("}")
    return "\n".join(lines)
