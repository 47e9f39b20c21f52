"""What a sink's ``sql`` may be: one query over the view ``batch``, and nothing else.

A query reaches Spark's whole SQL surface: ``SELECT ... FROM text.`/etc/...` `` reads any file,
``INSERT OVERWRITE DIRECTORY`` writes anywhere, ``reflect`` and ``java_method`` run JVM code,
``ADD JAR`` and DDL change the session. The rule is decided on Spark's own plans, never on the
query's text:

- **parsed** (before anything runs, at validation too): every node is one a query is made of
  (projections, filters, joins, aggregates, windows, set operations, CTEs, inline rows), so a
  command or DDL is refused; every relation it reads is ``batch`` or a CTE the query defines
  (no table, no file, no path, no table-valued function); no function it calls reaches the JVM
  or the files (``reflect``, ``java_method``, ``try_reflect``, ``input_file_*``), and none is
  named with a catalog or database (a persistent function);
- **analysed** (in the executor, over the batch, before the query runs): what it reads is the
  batch's rows or inline ones, and no expression is a user-defined or reflective function.

On a classic session the plans are Spark's own objects, walked through its JVM. A Spark
Connect session has no JVM here: its plans are read from ``EXPLAIN EXTENDED``, Spark's own
rendering of the same trees, node by node.

Pure except for reading the plans: :func:`refusal` decides on :class:`PlanFacts`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

VIEW = "batch"

QUERY_NODES = frozenset(
    {
        "Aggregate",
        "CTE",
        "CTERelationDef",
        "CTERelationRef",
        "Deduplicate",
        "Distinct",
        "Except",
        "Expand",
        "Filter",
        "Generate",
        "GlobalLimit",
        "Intersect",
        "Join",
        "LateralJoin",
        "LocalLimit",
        "LocalRelation",
        "LogicalRDD",
        "Offset",
        "OneRowRelation",
        "Pivot",
        "Project",
        "Repartition",
        "RepartitionByExpression",
        "ResolvedHint",
        "Sample",
        "Sort",
        "SubqueryAlias",
        "Tail",
        "Union",
        "UnresolvedHaving",
        "UnresolvedHint",
        "UnresolvedInlineTable",
        "UnresolvedRelation",
        "UnresolvedSubqueryColumnAliases",
        "UnresolvedWith",
        "Unpivot",
        "View",
        "Window",
        "WithCTE",
        "WithWindowDefinition",
    }
)
"""The plan nodes a query over the batch is made of, parsed or analysed; any other (a command,
DDL, a table or file relation, a table-valued function) is refused."""

DENIED_FUNCTIONS = frozenset(
    {
        "reflect",
        "java_method",
        "try_reflect",
        "input_file_name",
        "input_file_block_start",
        "input_file_block_length",
    }
)
"""Built-in functions that call into the JVM, or tell what files a plan read."""

DENIED_EXPRESSIONS = frozenset(
    {
        "CallMethodViaReflection",
        "TryReflect",
        "InputFileName",
        "InputFileBlockStart",
        "InputFileBlockLength",
        "ScalaUDF",
        "ScalaUDAF",
        "ScalaAggregator",
        "PythonUDF",
        "PythonUDAF",
        "PythonUDTF",
        "HiveSimpleUDF",
        "HiveGenericUDF",
        "HiveGenericUDTF",
        "HiveUDAFFunction",
    }
)
"""Analysed expressions that run code a query names: reflection and user-defined functions."""


@dataclass
class PlanFacts:
    """What a rule needs of a plan: its nodes by class, the relations it reads (identifier
    parts), the CTEs it defines, the functions it names and the expressions' classes."""

    nodes: set[str] = field(default_factory=set)
    relations: list[tuple[str, ...]] = field(default_factory=list)
    ctes: set[str] = field(default_factory=set)
    functions: list[tuple[str, ...]] = field(default_factory=list)
    expressions: set[str] = field(default_factory=set)


def refusal(facts: PlanFacts, builtins: frozenset[str] | None = None) -> str | None:
    """Why a query with these facts is not a query over the batch alone; None when it is.
    With ``builtins`` (Spark's own function names), a function not among them is refused: a
    name may resolve to a function someone created in the catalog."""
    odd = sorted(facts.nodes - QUERY_NODES)
    if odd:
        return (
            f"is not a query over the view {VIEW}: it holds {', '.join(odd)} "
            "(commands, DDL, tables, files and table-valued functions are refused)"
        )
    allowed = {VIEW} | {c.lower() for c in facts.ctes}
    for parts in facts.relations:
        if len(parts) != 1 or parts[0].lower() not in allowed:
            return f"reads {'.'.join(parts)}; a query reads the view {VIEW} alone"
    for parts in facts.functions:
        if len(parts) > 1:
            return f"calls {'.'.join(parts)}, a function of a catalog; only built-ins are taken"
        if parts[0].lower() in DENIED_FUNCTIONS:
            return f"calls {parts[0]}, which reaches the JVM or the files; it is refused"
        if builtins is not None and parts[0].lower() not in builtins:
            return f"calls {parts[0]}, which is not one of Spark's built-in functions"
    denied = sorted(facts.expressions & DENIED_EXPRESSIONS)
    if denied:
        return f"uses {', '.join(denied)}, which runs code the query names; it is refused"
    return None


# -- reading a classic session's plans, through its JVM --------------------------------------


def _seq(scala_seq: Any) -> Iterator[Any]:
    for i in range(scala_seq.size()):
        yield scala_seq.apply(i)


def _name(node: Any) -> str:
    return str(node.getClass().getSimpleName()).rstrip("$")


def jvm_facts(plan: Any) -> PlanFacts:
    """The facts of a JVM ``LogicalPlan``: every node, through its children, its inner
    children (a CTE's definitions) and the subqueries in its expressions."""
    facts = PlanFacts()
    pending = [plan]
    while pending:
        node = pending.pop()
        name = _name(node)
        facts.nodes.add(name)
        if name == "UnresolvedRelation":
            facts.relations.append(tuple(str(p) for p in _seq(node.multipartIdentifier())))
        if name == "UnresolvedWith":
            facts.ctes |= {str(pair._1()) for pair in _seq(node.cteRelations())}
        if name == "CTERelationDef":
            facts.ctes.add(str(node.id()))
        pending += [*_seq(node.children()), *_seq(node.innerChildren()), *_seq(node.subqueries())]
        for expression in _seq(node.expressions()):
            _expression_facts(expression, facts)
    return facts


def _expression_facts(root: Any, facts: PlanFacts) -> None:
    pending = [root]
    while pending:
        expression = pending.pop()
        name = _name(expression)
        facts.expressions.add(name)
        if name == "UnresolvedFunction":
            facts.functions.append(tuple(str(p) for p in _seq(expression.nameParts())))
        pending += list(_seq(expression.children()))


# -- reading a Spark Connect session's plans, from EXPLAIN EXTENDED ---------------------------

_SECTION = re.compile(r"^== (.+) ==$")
_TREE = re.compile(r"^[\s:|+-]*")  # the branches drawn before a node
_NODE = re.compile(r"^'?([A-Za-z][A-Za-z0-9]*)")
_RELATION = re.compile(r"^'?UnresolvedRelation \[(.*?)\]")
_CALL = re.compile(r"'([A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*)\(")
_CTE = re.compile(r"^'?(?:UnresolvedWith|CTE) \[(.*?)\]")


def explained_sections(text: str) -> dict[str, list[str]]:
    """EXPLAIN EXTENDED's output by section ("Parsed Logical Plan", "Analyzed Logical Plan",
    ...), each a list of its lines."""
    sections: dict[str, list[str]] = {}
    current: list[str] = []
    for line in text.splitlines():
        found = _SECTION.match(line.strip())
        if found:
            current = sections.setdefault(found.group(1), [])
        elif line.strip():
            current.append(line)
    return sections


def text_facts(lines: Iterable[str]) -> PlanFacts:
    """The facts of one plan as EXPLAIN draws it: a node per line, behind its branches."""
    facts = PlanFacts()
    for line in lines:
        body = _TREE.sub("", line)
        node = _NODE.match(body)
        if node is None:
            continue
        facts.nodes.add("UnresolvedWith" if node.group(1) == "CTE" else node.group(1))
        relation = _RELATION.match(body)
        if relation is not None:
            facts.relations.append(tuple(p.strip() for p in relation.group(1).split(",")))
        cte = _CTE.match(body)
        if cte is not None:
            facts.ctes |= {c.strip() for c in cte.group(1).split(",") if c.strip()}
        facts.functions += [tuple(call.split(".")) for call in _CALL.findall(body)]
    return facts


_RESOLVED_CALL = re.compile(r"\b([A-Za-z_][A-Za-z0-9_]*)\(")
_SCHEMA = re.compile(r"^(?:`(?:[^`]|``)*`|[^\s\[:`']+): ")  # "total: bigint, `a b`: string"


def analysed_text_facts(lines: Iterable[str]) -> PlanFacts:
    """The facts of an analysed plan as EXPLAIN draws it: its nodes, and as functions those of
    :data:`DENIED_FUNCTIONS` it calls (a drawn expression names built-ins and user functions
    alike, so only the denied ones are told apart). The drawing opens with the result's
    schema, which is no node."""
    facts = PlanFacts()
    lines = list(lines)
    if lines and _SCHEMA.match(lines[0]):
        lines = lines[1:]
    for line in lines:
        body = _TREE.sub("", line)
        node = _NODE.match(body)
        if node is not None:
            facts.nodes.add(node.group(1))
        called = {c.lower() for c in _RESOLVED_CALL.findall(body)}
        facts.functions += [(c,) for c in sorted(called & DENIED_FUNCTIONS)]
    return facts
