"""What a sink's query may be, decided on the facts of its plans: a query over the batch alone.
The facts are read from real Spark plans in ``tests/integration/test_executor.py``."""

from __future__ import annotations

import pytest

from headrace.executor.sqlguard import PlanFacts, analysed_text_facts, refusal, text_facts

BUILTINS = frozenset({"upper", "count", "sum", "reflect", "java_method", "coalesce"})


def facts(**given: object) -> PlanFacts:
    found = PlanFacts(nodes={"Project", "UnresolvedRelation"}, relations=[("batch",)])
    for name, value in given.items():
        setattr(found, name, value)
    return found


def test_a_query_over_the_batch_and_its_ctes_is_taken() -> None:
    assert refusal(facts(), BUILTINS) is None
    with_cte = facts(
        nodes={"UnresolvedWith", "Project", "SubqueryAlias", "UnresolvedRelation", "Aggregate"},
        relations=[("batch",), ("Totals",)],
        ctes={"totals"},
        functions=[("upper",), ("count",)],
    )
    assert refusal(with_cte, BUILTINS) is None


@pytest.mark.parametrize(
    ("given", "says"),
    [
        ({"nodes": {"InsertIntoDir", "Project"}}, "holds InsertIntoDir"),
        ({"nodes": {"CreateTable"}}, "holds CreateTable"),
        ({"nodes": {"AddJarsCommand"}}, "holds AddJarsCommand"),
        ({"nodes": {"UnresolvedTableValuedFunction"}}, "holds UnresolvedTableValuedFunction"),
        ({"relations": [("text", "/etc/passwd")]}, "reads text./etc/passwd"),
        ({"relations": [("default", "secrets")]}, "reads default.secrets"),
        ({"relations": [("orders",)]}, "reads orders"),
        ({"functions": [("reflect",)]}, "calls reflect, which reaches the JVM"),
        ({"functions": [("JAVA_METHOD",)]}, "calls JAVA_METHOD, which reaches the JVM"),
        ({"functions": [("input_file_name",)]}, "reaches the JVM or the files"),
        ({"functions": [("db", "exfiltrate")]}, "a function of a catalog"),
        ({"functions": [("made_up",)]}, "not one of Spark's built-in functions"),
        ({"expressions": {"ScalaUDF", "Alias"}}, "uses ScalaUDF"),
        ({"expressions": {"CallMethodViaReflection"}}, "uses CallMethodViaReflection"),
    ],
)
def test_anything_else_is_refused_with_the_reason(given: dict[str, object], says: str) -> None:
    found = refusal(facts(**given), BUILTINS)
    assert found is not None and says in found


# A parsed plan as EXPLAIN EXTENDED draws it: unresolved nodes and calls quoted with a tick.
PARSED = """\
'Project ['upper('key) AS k#0, 'reflect(java.util.UUID, randomUUID)]
+- 'Filter ('amount > 1)
   +- 'UnresolvedRelation [text, /etc/passwd], [], false
"""


def test_a_drawn_plan_gives_its_nodes_relations_and_calls() -> None:
    found = text_facts(PARSED.splitlines())
    assert found.nodes == {"Project", "Filter", "UnresolvedRelation"}
    assert found.relations == [("text", "/etc/passwd")]
    assert sorted(found.functions) == [("reflect",), ("upper",)]
    analysed = analysed_text_facts(
        [
            "x: string, `total sum`: bigint",  # the result's schema, first
            "Project [reflect(java.util.UUID, randomUUID, true) AS x#1]",
            "+- LocalRelation [k#0]",
        ]
    )
    assert analysed.nodes == {"Project", "LocalRelation"}
    assert analysed.functions == [("reflect",)]
