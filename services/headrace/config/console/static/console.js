// The headrace console: one page, routed by the URL's fragment. It reads and acts through the
// REST API (Kafka Connect's paths), and through the console's own documents under /ui/api/.
// Nothing from a config, a status or a trace is ever put into the page as markup: every text
// goes in as text (el()), so what a connector reports cannot run here.
"use strict";

const S = { session: null, board: null, sort: { key: "name", dir: 1 }, filter: "", stateFilter: "",
  typeFilter: "", render: null, events: null };

// ---- small helpers -------------------------------------------------------------------------

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k.startsWith("on")) node.addEventListener(k.slice(2), v);
    else if (k === "class") node.className = v;
    else node.setAttribute(k, v === true ? "" : String(v));
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

function badge(state) { return el("span", { class: `state ${state}`, "data-state": state }, state); }
function enc(name) { return encodeURIComponent(name); }
function when(ms) { return ms ? new Date(ms).toLocaleString() : ""; }
function admin() { return S.session && S.session.role === "admin"; }

function notice(text, ok) {
  const box = document.getElementById("notice");
  box.textContent = text;
  box.className = ok ? "ok" : "";
  box.hidden = !text;
}

class ApiError extends Error {
  constructor(status, message) { super(message); this.status = status; }
}

// One call of the REST API. Changes carry the console's CSRF header (with auth on).
async function api(method, path, body) {
  const headers = { Accept: "application/json" };
  if (body !== undefined) headers["Content-Type"] = "application/json";
  if (method !== "GET" && S.session && S.session.csrf) headers["X-Headrace-Csrf"] = S.session.csrf;
  const response = await fetch(path, { method, headers, credentials: "same-origin",
    body: body === undefined ? undefined : JSON.stringify(body) });
  const text = await response.text();
  let parsed = null;
  try { parsed = text ? JSON.parse(text) : null; } catch (_) { parsed = text; }
  if (response.status === 401) { window.location.assign("/ui/login"); throw new ApiError(401, "log in"); }
  if (!response.ok) {
    const message = parsed && parsed.message ? parsed.message : `${response.status} ${response.statusText}`;
    throw new ApiError(response.status, message);
  }
  return parsed;
}

// Asks, in the page's own dialog, before anything changes. Resolves with the dialog's form
// values when confirmed, null when cancelled.
function confirmAction(title, text, extra) {
  const dialog = document.getElementById("confirm");
  document.getElementById("confirm-title").textContent = title;
  document.getElementById("confirm-text").textContent = text;
  const box = document.getElementById("confirm-extra");
  box.replaceChildren(...(extra || []));
  return new Promise((resolve) => {
    dialog.addEventListener("close", () => {
      if (dialog.returnValue !== "ok") return resolve(null);
      const values = {};
      for (const input of box.querySelectorAll("input")) values[input.name] = input.checked;
      resolve(values);
    }, { once: true });
    dialog.returnValue = "";
    dialog.showModal();
  });
}

async function act(title, text, call, extra) {
  const values = await confirmAction(title, text, extra);
  if (values === null) return false;
  try {
    await call(values);
    notice(`${title}: done.`, true);
    return true;
  } catch (error) {
    notice(`${title}: ${error.message}`);
    return false;
  }
}

// ---- live board ----------------------------------------------------------------------------

function listen() {
  if (S.events) return;
  const live = document.getElementById("live");
  S.events = new EventSource("/ui/api/events");
  S.events.addEventListener("open", () => { live.textContent = "live"; live.classList.add("on"); });
  S.events.addEventListener("error", () => { live.textContent = "reconnecting"; live.classList.remove("on"); });
  S.events.addEventListener("board", (event) => {
    S.board = JSON.parse(event.data);
    if (S.render && S.render.onBoard) S.render.onBoard(S.board);
  });
}

function row(name) {
  return S.board ? S.board.connectors.find((c) => c.name === name) : undefined;
}

// ---- connectors ----------------------------------------------------------------------------

const COLUMNS = [
  ["name", "Name"], ["state", "State"], ["type", "Type"], ["tasks", "Tasks"], ["plugin", "Plugin"],
  ["version", "Version"], ["worker", "Worker"], ["lag", "Lag"], ["error", "Last error"],
];

function sortValue(c, key) {
  if (key === "tasks") return c.tasks.running * 1e6 + c.tasks.total;
  if (key === "lag") return c.lag === null || c.lag === undefined ? -1 : c.lag;
  return String(c[key] || "").toLowerCase();
}

function connectorsView(view) {
  const filter = el("input", { type: "search", placeholder: "Filter by name, plugin or worker",
    value: S.filter, "aria-label": "Filter", oninput: (e) => { S.filter = e.target.value; draw(); } });
  const states = ["", "RUNNING", "PAUSED", "STOPPED", "FAILED", "UNASSIGNED", "RESTARTING"];
  const stateSelect = el("select", { "aria-label": "State", onchange: (e) => { S.stateFilter = e.target.value; draw(); } },
    states.map((s) => el("option", { value: s, selected: s === S.stateFilter }, s || "every state")));
  const typeSelect = el("select", { "aria-label": "Type", onchange: (e) => { S.typeFilter = e.target.value; draw(); } },
    ["", "source", "sink"].map((s) => el("option", { value: s, selected: s === S.typeFilter }, s || "every type")));
  const count = el("span", { class: "muted", id: "count" });
  const create = el("button", { class: "primary", disabled: !admin(), onclick: () => { location.hash = "#/new"; } },
    "New connector");
  const table = el("table", { id: "connectors" });
  view.replaceChildren(el("h1", {}, "Connectors"), el("div", { class: "toolbar" }, filter, stateSelect, typeSelect, count, create), table);

  function draw() {
    if (!S.board) { table.replaceChildren(el("caption", {}, "Loading…")); return; }
    const needle = S.filter.toLowerCase();
    const shown = S.board.connectors.filter((c) =>
      (!needle || [c.name, c.plugin, c.worker].some((v) => String(v).toLowerCase().includes(needle))) &&
      (!S.stateFilter || c.state === S.stateFilter) && (!S.typeFilter || c.type === S.typeFilter));
    const { key, dir } = S.sort;
    shown.sort((a, b) => { const x = sortValue(a, key), y = sortValue(b, key); return x < y ? -dir : x > y ? dir : 0; });
    count.textContent = `${shown.length} of ${S.board.connectors.length}`;
    const head = el("tr", {}, COLUMNS.map(([k, label]) => el("th", {
      class: "sortable", "aria-sort": k === key ? (dir > 0 ? "ascending" : "descending") : null,
      onclick: () => { S.sort = { key: k, dir: k === key ? -dir : 1 }; draw(); } }, label)));
    const body = shown.map((c) => el("tr", { "data-connector": c.name },
      el("td", {}, el("a", { href: `#/connectors/${enc(c.name)}` }, c.name)),
      el("td", {}, badge(c.state)),
      el("td", {}, c.type),
      el("td", { class: "num", "data-tasks": `${c.tasks.running}/${c.tasks.total}` }, `${c.tasks.running}/${c.tasks.total}`),
      el("td", { class: "mono" }, c.plugin),
      el("td", {}, c.version),
      el("td", {}, c.worker),
      el("td", { class: "num" }, c.lag === null || c.lag === undefined ? "" : c.lag),
      el("td", { class: "error" }, c.error)));
    table.replaceChildren(el("thead", {}, head), el("tbody", {}, body));
  }
  draw();
  return { onBoard: draw };
}

// ---- one connector -------------------------------------------------------------------------

function restartOptions() {
  return [
    el("label", {}, el("input", { type: "checkbox", name: "includeTasks" }), " include its tasks"),
    el("br"),
    el("label", {}, el("input", { type: "checkbox", name: "onlyFailed" }), " only what failed"),
  ];
}

function connectorView(view, name) {
  const base = `/connectors/${enc(name)}`;
  const title = el("h1", {}, name, " ", el("span", { id: "connector-state" }));
  const actions = el("div", { class: "actions" });
  const tasks = el("table", { id: "tasks" });
  const config = el("table", { id: "config" });
  const offsets = el("div", { id: "offsets" });
  const history = el("table", { id: "history" });
  const info = el("p", { class: "muted", id: "connector-info" });
  view.replaceChildren(el("p", {}, el("a", { href: "#/" }, "← Connectors")), title, info, actions,
    el("h2", {}, "Tasks"), tasks, el("div", { class: "grid2" },
      el("section", {}, el("h2", {}, "Config"), config),
      el("section", {}, el("h2", {}, "Offsets"), offsets)),
    el("h2", {}, "History"), history);
  let status = null;
  let last = "";

  const button = (label, cls, enabled, onclick) =>
    el("button", { class: cls, disabled: !admin() || !enabled, onclick }, label);

  function drawActions() {
    const state = status ? status.connector.state : "";
    const run = async (t, text, call, extra) => { if (await act(t, text, call, extra)) refresh(); };
    actions.replaceChildren(
      button("Pause", "", state !== "PAUSED" && state !== "STOPPED", () => run("Pause", `Pause ${name}?`, () => api("PUT", `${base}/pause`))),
      button("Resume", "", state === "PAUSED" || state === "STOPPED", () => run("Resume", `Resume ${name}?`, () => api("PUT", `${base}/resume`))),
      button("Stop", "", state !== "STOPPED", () => run("Stop", `Stop ${name}? Its tasks stop and are forgotten until it resumes.`, () => api("PUT", `${base}/stop`))),
      button("Restart", "", true, () => run("Restart", `Restart ${name}?`, (v) =>
        api("POST", `${base}/restart?includeTasks=${!!v.includeTasks}&onlyFailed=${!!v.onlyFailed}`), restartOptions())),
      button("Edit", "", true, () => { location.hash = `#/connectors/${enc(name)}/edit`; }),
      button("Delete", "danger", true, async () => {
        if (await act("Delete", `Delete ${name}? Its tasks get their deletion stop; its config is gone.`, () => api("DELETE", base))) location.hash = "#/";
      }),
    );
  }

  function drawTasks() {
    const rows = (status ? status.tasks : []).map((t) => el("tr", { "data-task": t.id },
      el("td", { class: "num" }, t.id), el("td", {}, badge(t.state)), el("td", {}, t.worker_id), el("td", {}, t.version || ""),
      el("td", {}, t.trace ? el("details", {}, el("summary", {}, t.trace.split("\n")[0]), el("pre", {}, t.trace)) : ""),
      el("td", {}, el("button", { disabled: !admin(), onclick: async () => {
        if (await act("Restart task", `Restart task ${t.id} of ${name}?`, () => api("POST", `${base}/tasks/${t.id}/restart`))) refresh();
      } }, "Restart"))));
    tasks.replaceChildren(el("thead", {}, el("tr", {}, ["Task", "State", "Worker", "Version", "Trace", ""].map((h) => el("th", {}, h)))),
      el("tbody", {}, rows.length ? rows : [el("tr", {}, el("td", { colspan: 6, class: "muted" }, "No tasks."))]));
  }

  async function drawOffsets() {
    const stopped = status && status.connector.state === "STOPPED";
    let found;
    try { found = await api("GET", `${base}/offsets`); } catch (error) {
      offsets.replaceChildren(el("p", { class: "error" }, error.message)); return;
    }
    const list = found.offsets || [];
    const editor = el("textarea", { id: "offsets-json", "aria-label": "Offsets" }, JSON.stringify({ offsets: list }, null, 2));
    offsets.replaceChildren(
      list.length ? el("table", {}, el("thead", {}, el("tr", {}, el("th", {}, "Partition"), el("th", {}, "Offset"))),
        el("tbody", {}, list.map((o) => el("tr", {}, el("td", { class: "mono" }, JSON.stringify(o.partition)), el("td", { class: "mono" }, JSON.stringify(o.offset))))))
        : el("p", { class: "muted", id: "no-offsets" }, "No offsets."),
      el("p", { class: "muted" }, stopped ? "The connector is stopped: its offsets may be altered or reset."
        : "Offsets may be altered or reset only while the connector is STOPPED."),
      el("details", {}, el("summary", {}, "Alter"), editor,
        el("button", { disabled: !admin() || !stopped, onclick: async () => {
          let body;
          try { body = JSON.parse(editor.value); } catch (error) { notice(`Alter offsets: not JSON: ${error.message}`); return; }
          if (await act("Alter offsets", `Alter the offsets of ${name}?`, () => api("PATCH", `${base}/offsets`, body))) refresh();
        } }, "Alter offsets")),
      el("button", { class: "danger", id: "reset-offsets", disabled: !admin() || !stopped, onclick: async () => {
        if (await act("Reset offsets", `Reset every offset of ${name}? It starts from the beginning when resumed.`, () => api("DELETE", `${base}/offsets`))) refresh();
      } }, "Reset offsets"));
  }

  async function drawHistory() {
    const changes = await api("GET", `/ui/api/connectors/${enc(name)}/history`);
    history.replaceChildren(el("thead", {}, el("tr", {}, ["When", "Unit", "State", "Worker", "Note"].map((h) => el("th", {}, h)))),
      el("tbody", {}, changes.slice().reverse().map((c) => el("tr", {}, el("td", {}, c.at_ms ? when(c.at_ms) : "as found at the service's start"), el("td", {}, c.unit),
        el("td", {}, badge(c.state)), el("td", {}, c.worker), el("td", { class: "error" }, c.trace)))));
  }

  async function refresh() {
    try {
      const [got, st] = await Promise.all([api("GET", base), api("GET", `${base}/status`)]);
      status = st;
      document.getElementById("connector-state").replaceChildren(badge(st.connector.state));
      const r = row(name);
      info.textContent = `${got.type} · ${got.config["connector.class"] || ""}` +
        (st.connector.version ? ` ${st.connector.version}` : "") + (st.connector.worker_id ? ` · on ${st.connector.worker_id}` : "") +
        (r && r.lag !== null && r.lag !== undefined ? ` · lag ${r.lag}` : "");
      config.replaceChildren(el("tbody", {}, Object.keys(got.config).sort().map((k) =>
        el("tr", { "data-key": k }, el("td", { class: "mono" }, k), el("td", { class: "mono" }, got.config[k])))));
      drawActions();
      drawTasks();
      await Promise.all([drawOffsets(), drawHistory()]);
    } catch (error) {
      if (error.status === 404) { view.replaceChildren(el("h1", {}, name), el("p", { class: "error" }, error.message)); S.render = null; return; }
      notice(error.message);
    }
  }
  refresh();
  return { onBoard: () => {
    const now = JSON.stringify(row(name) || null);
    if (now !== last) { last = now; refresh(); }
  } };
}

// ---- create and edit -----------------------------------------------------------------------

function debounce(fn, ms) { let t; return (...args) => { clearTimeout(t); t = setTimeout(() => fn(...args), ms); }; }

function keyErrors(infos) {
  const errors = {};
  for (const c of (infos && infos.configs) || []) if (c.value.errors.length) errors[c.value.name] = c.value.errors;
  return errors;
}

async function newView(view) {
  const plugins = (await api("GET", "/connector-plugins")).filter((p) => !p.error);
  const name = el("input", { id: "connector-name", name: "name", required: true, autocomplete: "off" });
  const pluginSelect = el("select", { id: "plugin", "aria-label": "Plugin" },
    el("option", { value: "" }, "choose a plugin"),
    plugins.map((p) => el("option", { value: `${p.class}|${p.version}` }, `${p.class} ${p.version} (${p.type})`)));
  const fields = el("div", { id: "fields" });
  const optional = el("input", { type: "checkbox", id: "show-optional" });
  const errorBox = el("p", { class: "error", id: "form-error" });
  const submit = el("button", { class: "primary", type: "submit", id: "create" }, "Create");
  const json = el("textarea", { id: "create-json", "aria-label": "Connector as JSON" },
    JSON.stringify({ name: "", config: { "connector.class": "" } }, null, 2));
  let keys = [];

  const values = () => {
    const [cls, version] = pluginSelect.value.split("|");
    const config = { "connector.class": cls, "connector.plugin.version": version };
    for (const input of fields.querySelectorAll("input[data-key]")) if (input.value !== "") config[input.dataset.key] = input.value;
    if (name.value) config.name = name.value;
    return config;
  };

  const validate = debounce(async () => {
    if (!pluginSelect.value) return;
    const config = values();
    let infos;
    try { infos = await api("PUT", `/connector-plugins/${enc(config["connector.class"])}/config/validate`, config); }
    catch (error) { errorBox.textContent = error.message; return; }
    errorBox.textContent = "";
    const errors = keyErrors(infos);
    // The validation checks the name it is given; an empty one is the form's to say.
    if (!name.value.trim()) errors.name = ["name: a connector needs a name"];
    for (const field of form.querySelectorAll(".field[data-key]")) {
      const key = field.dataset.key;
      const shown = field.querySelector(".key-error");
      shown.textContent = (errors[key] || []).join(" ");
      field.classList.toggle("invalid", !!errors[key]);
      if (errors[key]) field.hidden = false;
      delete errors[key];
    }
    // A key the form has no field for (the plugin's own, or the runtime's) still says what is wrong.
    errorBox.textContent = Object.entries(errors).map(([k, v]) => `${k}: ${v.join(" ")}`).join(" ");
  }, 250);

  async function choose() {
    fields.replaceChildren();
    if (!pluginSelect.value) return;
    const [cls, version] = pluginSelect.value.split("|");
    const infos = await api("PUT", `/connector-plugins/${enc(cls)}/config/validate`, { "connector.class": cls, "connector.plugin.version": version });
    keys = infos.configs.map((c) => c.definition).filter((d) => !["name", "connector.class", "connector.plugin.version"].includes(d.name));
    for (const d of keys) {
      const wanted = d.required || d.name === "tasks.max" || d.name === "topics";
      const input = el("input", { id: `key-${d.name}`, name: d.name, "data-key": d.name, placeholder: d.default_value || "", oninput: validate,
        type: d.type === "PASSWORD" ? "password" : "text", autocomplete: d.type === "PASSWORD" ? "new-password" : "off" });
      fields.append(el("div", { class: "field", "data-key": d.name, "data-wanted": wanted ? "1" : "", hidden: !wanted && !optional.checked },
        el("label", { for: `key-${d.name}`, class: d.required ? "required" : "" }, d.name),
        input,
        el("div", {}, el("span", { class: "key-error", id: `error-${d.name}` }), el("span", { class: "doc" }, d.documentation || ""))));
    }
  }
  pluginSelect.addEventListener("change", choose);
  name.addEventListener("input", validate);
  optional.addEventListener("change", () => {
    for (const f of fields.querySelectorAll(".field")) f.hidden = !optional.checked && !f.dataset.wanted && !f.classList.contains("invalid");
  });

  const form = el("form", { id: "create-form", onsubmit: async (e) => {
    e.preventDefault();
    const config = values();
    delete config.name;
    try {
      await api("POST", "/connectors", { name: name.value, config });
      location.hash = `#/connectors/${enc(name.value)}`;
    } catch (error) { errorBox.textContent = error.message; validate(); }
  } },
  el("div", { class: "field", "data-key": "name" }, el("label", { for: "connector-name", class: "required" }, "name"), name,
    el("div", {}, el("span", { class: "key-error", id: "error-name" }))),
  el("div", { class: "field" }, el("label", { for: "plugin", class: "required" }, "plugin"), pluginSelect, el("span")),
  el("label", {}, optional, " show every key"), fields, errorBox, submit);

  view.replaceChildren(el("p", {}, el("a", { href: "#/" }, "← Connectors")), el("h1", {}, "New connector"), form,
    el("details", {}, el("summary", {}, "…or create from JSON"), json, el("button", { class: "primary", id: "create-from-json", onclick: async () => {
      let body;
      try { body = JSON.parse(json.value); } catch (error) { notice(`Not JSON: ${error.message}`); return; }
      try { await api("POST", "/connectors", body); location.hash = `#/connectors/${enc(body.name)}`; }
      catch (error) { notice(`Create: ${error.message}`); }
    } }, "Create from JSON")));
  return null;
}

async function editView(view, name) {
  const base = `/connectors/${enc(name)}`;
  const config = await api("GET", `${base}/config`);
  const editor = el("textarea", { id: "edit-json", "aria-label": "Config" }, JSON.stringify(config, null, 2));
  const patch = el("input", { type: "checkbox", id: "patch" });
  const errors = el("ul", { class: "error", id: "edit-errors" });
  view.replaceChildren(el("p", {}, el("a", { href: `#/connectors/${enc(name)}` }, `← ${name}`)), el("h1", {}, `Edit ${name}`),
    el("p", { class: "muted" }, "Secret values show as [hidden]: left so, they keep the value stored."),
    editor, el("p", {}, el("label", {}, patch, " patch: change only the keys given (null removes one)")), errors,
    el("button", { class: "primary", id: "save", disabled: !admin(), onclick: async () => {
      let body;
      try { body = JSON.parse(editor.value); } catch (error) { errors.replaceChildren(el("li", {}, `not JSON: ${error.message}`)); return; }
      if (!patch.checked) {
        const cls = body["connector.class"] || "";
        try {
          const infos = await api("PUT", `/connector-plugins/${enc(cls)}/config/validate`, { ...body, name });
          const found = keyErrors(infos);
          const hidden = Object.entries(found).filter(([k]) => body[k] !== "[hidden]");
          if (hidden.length) { errors.replaceChildren(...hidden.map(([k, v]) => el("li", { "data-key": k }, `${k}: ${v.join(" ")}`))); return; }
        } catch (error) { errors.replaceChildren(el("li", {}, error.message)); return; }
      }
      const ok = await act(patch.checked ? "Patch" : "Save", `${patch.checked ? "Patch" : "Replace"} the config of ${name}?`,
        () => api(patch.checked ? "PATCH" : "PUT", `${base}/config`, body));
      if (ok) location.hash = `#/connectors/${enc(name)}`;
    } }, "Save"));
  return null;
}

// ---- plugins -------------------------------------------------------------------------------

async function pluginsView(view) {
  const plugins = await api("GET", "/connector-plugins?connectorsOnly=false");
  const table = el("table", { id: "plugins" });
  view.replaceChildren(el("h1", {}, "Plugins"), table);
  function draw() {
    // Each connector under the class its alias names and the version it runs (or would).
    const using = (p) => (S.board ? S.board.connectors : []).filter((c) => c.plugin_class === p.class && c.version === p.version);
    table.replaceChildren(el("thead", {}, el("tr", {}, ["Plugin", "Type", "Version", "Connectors", "Config keys"].map((h) => el("th", {}, h)))),
      el("tbody", {}, plugins.map((p) => {
        const keys = el("details", {}, el("summary", {}, "keys"));
        keys.addEventListener("toggle", async () => {
          if (!keys.open || keys.dataset.loaded) return;
          keys.dataset.loaded = "1";
          try {
            const found = await api("GET", `/connector-plugins/${enc(p.class)}/config?version=${enc(p.version)}`);
            keys.append(el("table", {}, el("tbody", {}, found.map((k) => el("tr", {}, el("td", { class: "mono" }, k.name),
              el("td", {}, k.type), el("td", {}, k.required ? "required" : (k.default_value == null ? "" : `default ${k.default_value}`)),
              el("td", { class: "muted" }, k.documentation || ""))))));
          } catch (error) { keys.append(el("p", { class: "error" }, error.message)); }
        });
        const runs = using(p);
        return el("tr", { "data-plugin": p.class, "data-version": p.version },
          el("td", { class: "mono" }, p.class), el("td", {}, p.type), el("td", {}, p.version),
          el("td", {}, runs.map((c) => el("a", { class: "tag", href: `#/connectors/${enc(c.name)}` }, c.name)), p.error ? el("span", { class: "error" }, p.error) : ""),
          el("td", {}, p.type === "source" || p.type === "sink" ? keys : ""));
      })));
  }
  draw();
  return { onBoard: draw };
}

// ---- workers and rebalances ----------------------------------------------------------------

async function clusterView(view) {
  const workers = el("div", { id: "workers", class: "grid2" });
  const replicas = el("table", { id: "coordinators" });
  const generations = el("table", { id: "generations" });
  const pending = el("table", { id: "pending-deletions" });
  view.replaceChildren(el("h1", {}, "Workers and rebalances"), el("h2", {}, "Workers"), workers,
    el("h2", {}, "Coordinators"), replicas, el("h2", {}, "Pending deletions"), pending, el("h2", {}, "Generations"), generations);

  function drawWorkers() {
    const placed = S.board ? S.board.workers : {};
    const names = Object.keys(placed);
    workers.replaceChildren(...(names.length ? names.map((w) => el("div", { class: "card", "data-worker": w },
      el("strong", {}, w), el("span", { class: "muted" }, ` · ${placed[w].length} units`), el("div", {}, placed[w].map((u) => el("span", { class: "tag" }, u)))))
      : [el("p", { class: "muted" }, "No worker runs anything.")]));
  }

  let timer = null;
  async function drawCluster() {
    let found;
    try { found = await api("GET", "/ui/api/cluster"); } catch (error) { notice(error.message); return; }
    replicas.replaceChildren(el("thead", {}, el("tr", {}, ["Address", "Role", ""].map((h) => el("th", {}, h)))),
      el("tbody", {}, found.replicas.map((r) => el("tr", { "data-role": r.role }, el("td", { class: "mono" }, r.address), el("td", {}, r.role), el("td", { class: "muted" }, r.detail)))));
    const latest = found.generations[found.generations.length - 1];
    const owed = latest ? latest.pending_deletions : [];
    pending.replaceChildren(el("thead", {}, el("tr", {}, ["Unit", "Incarnation", "Stop runs on"].map((h) => el("th", {}, h)))),
      el("tbody", {}, owed.length ? owed.map((p) => el("tr", {}, el("td", {}, p.unit), el("td", { class: "mono" }, p.incarnation), el("td", {}, p.owner || "any worker")))
        : [el("tr", {}, el("td", { colspan: 3, class: "muted" }, "None."))]));
    const list = (items) => items.length ? items.map((t) => el("span", { class: "tag" }, t)) : "";
    generations.replaceChildren(el("thead", {}, el("tr", {}, ["Generation", "When", "Coordinator", "Members", "New", "Moved", "Revoked", "Departed"].map((h) => el("th", {}, h)))),
      el("tbody", {}, found.generations.slice().reverse().map((g) => el("tr", { "data-generation": g.generation },
        el("td", { class: "num" }, g.generation), el("td", {}, when(g.recorded_at_ms)), el("td", { class: "mono" }, g.coordinator),
        el("td", {}, list(g.members.map((m) => `${m.worker}: ${m.connectors}c ${m.tasks}t`))),
        el("td", {}, list(g.new)),
        el("td", { class: "moved" }, list(g.moved.map((m) => `${m.unit}: ${m.from} → ${m.to}`))),
        el("td", {}, list(g.revoked.map((r) => `${r.unit} from ${r.worker}${r.deleted ? " (deleted)" : ""}`))),
        el("td", { class: "departed" }, list(g.departed.map((d) => `${d.worker} (${d.units} kept)`)))))));
  }
  drawWorkers();
  await drawCluster();
  timer = setInterval(() => { if (S.render && S.render.cluster) drawCluster(); }, 3000);
  return { cluster: true, onBoard: drawWorkers, stop: () => clearInterval(timer) };
}

// ---- routing -------------------------------------------------------------------------------

async function route() {
  if (S.render && S.render.stop) S.render.stop();
  S.render = null;
  notice("");
  const view = document.getElementById("view");
  const hash = location.hash.replace(/^#/, "") || "/";
  const parts = hash.split("/").filter(Boolean).map(decodeURIComponent);
  const section = parts[0] === "plugins" ? "plugins" : parts[0] === "cluster" ? "cluster" : "connectors";
  for (const a of document.querySelectorAll("nav a")) a.classList.toggle("on", a.dataset.nav === section);
  try {
    if (parts[0] === "connectors" && parts[1] && parts[2] === "edit") S.render = await editView(view, parts[1]);
    else if (parts[0] === "connectors" && parts[1]) S.render = connectorView(view, parts[1]);
    else if (parts[0] === "new") S.render = await newView(view);
    else if (parts[0] === "plugins") S.render = await pluginsView(view);
    else if (parts[0] === "cluster") S.render = await clusterView(view);
    else S.render = connectorsView(view);
  } catch (error) {
    view.replaceChildren(el("p", { class: "error" }, error.message));
  }
}

async function start() {
  S.session = await api("GET", "/ui/api/session");
  document.getElementById("who").textContent = S.session.auth ? `role: ${S.session.role}` : "auth off";
  document.getElementById("logout").hidden = !S.session.auth;
  if (S.session.csrf) {  // the logout form carries it too
    document.getElementById("logout").addEventListener("submit", async (e) => {
      e.preventDefault();
      await fetch("/ui/logout", { method: "POST", headers: { "X-Headrace-Csrf": S.session.csrf }, credentials: "same-origin" });
      location.assign("/ui/login");
    });
  }
  try { S.board = await api("GET", "/ui/api/board"); } catch (error) { notice(error.message); }
  window.addEventListener("hashchange", route);
  await route();
  listen();
  document.body.dataset.ready = "1";
}

document.addEventListener("DOMContentLoaded", start);
