"""Hypothesis strategies of config events, for the folds that read the configs topic."""

from __future__ import annotations

from hypothesis import strategies as st

from headrace.core.model.autorestart import Attempt
from headrace.core.model.configstate import (
    AppliedRequest,
    AutoRestartsRecorded,
    ConnectorConfigured,
    ConnectorRemoved,
    InstalledPlugin,
    LoggerLevelSet,
    LogLevel,
    PluginInstalled,
    PluginUninstalled,
    RequestApplied,
    RequestForgotten,
    RestartRequested,
    SessionKey,
    SessionKeyCreated,
    TargetStateChanged,
    TaskConfigured,
    TasksCommitted,
    TaskSetOrigin,
    TopicsReset,
)
from headrace.core.model.structs import Target

names = st.text(alphabet="abc-", min_size=1, max_size=4)
tasks = st.integers(min_value=0, max_value=2)
any_event = st.one_of(
    st.builds(
        ConnectorConfigured,
        names,
        st.builds(lambda n: {"n": n}, names),
        st.sampled_from(["i1", "i2"]),
        st.integers(0, 9),
    ),
    st.builds(ConnectorRemoved, names),
    st.builds(TaskConfigured, names, tasks, st.builds(lambda n: {"t": n}, names)),
    st.builds(
        TasksCommitted, names, tasks, st.none() | st.builds(TaskSetOrigin, st.integers(0, 9))
    ),
    st.builds(TargetStateChanged, names, st.sampled_from(list(Target))),
    st.builds(RestartRequested, names, st.tuples(st.integers(-1, 2)), st.integers(0, 9)),
    st.builds(
        AutoRestartsRecorded,
        names,
        st.dictionaries(
            st.integers(-1, 2), st.builds(Attempt, st.integers(0, 3), st.integers(0, 9)), max_size=2
        ),
    ),
    st.builds(SessionKeyCreated, st.builds(SessionKey, st.binary(max_size=3), st.integers(0, 9))),
    st.builds(RequestApplied, names, st.builds(AppliedRequest, st.just("create"), names)),
    st.builds(RequestForgotten, names),
    st.builds(LoggerLevelSet, names, st.builds(LogLevel, st.just("DEBUG"), st.integers(0, 9))),
    st.builds(TopicsReset, names, st.integers(0, 9)),
    st.builds(PluginInstalled, names, st.builds(InstalledPlugin, names, st.integers(0, 9))),
    st.builds(PluginUninstalled, names),
)
