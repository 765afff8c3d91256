// The HTML report's viewer, inlined into the report by offline_agent/eval/html_report.py.
// No framework and no network: it reads the table's JSON from #report-data, renders table rows in chunks as they
// scroll into view, and parses and builds a trajectory (its own JSON block, #t<row>, after this script) only when
// its row is opened. Every piece of data reaches the page through textContent (never innerHTML), so questions
// and observations show as the text they are.
(function () {
  "use strict";
  var CHUNK = 100;
  performance.mark("report-script");
  var D = JSON.parse(document.getElementById("report-data").textContent);
  performance.mark("report-parsed");

  function el(tag, cls, text) {
    var node = document.createElement(tag);
    if (cls) node.className = cls;
    if (text !== undefined && text !== null) node.textContent = String(text);
    return node;
  }
  function add(parent) {
    for (var i = 1; i < arguments.length; i++) if (arguments[i]) parent.appendChild(arguments[i]);
    return parent;
  }
  function fixed(x, digits) { return x === null || x === undefined ? "n/a" : Number(x).toFixed(digits); }
  function score(x) { return x === null || x === undefined ? "n/a" : (100 * x).toFixed(0); }
  // HotpotQA's answer normalisation (lowercase, no punctuation, no articles, single spaces): what "changed" compares.
  var PUNCT = /[!"#$%&'()*+,\-./:;<=>?@[\\\]^_`{|}~]/g;
  function norm(text) {
    return String(text || "").toLowerCase().replace(PUNCT, "").replace(/\b(a|an|the)\b/g, " ").split(/\s+/)
      .filter(Boolean).join(" ");
  }
  function answer(row) {
    if (row.o === "abstained") return "(abstained: the documents do not say)";
    return row.p === null ? "(no answer)" : row.p;
  }
  // right, wrong or abstained (an outcome of its own); rows from before outcomes go by EM
  function outcomeOf(row) { return row.o ? (row.o === "none" ? "wrong" : row.o) : (row.em ? "right" : "wrong"); }
  function option(select, value, label) { add(select, el("option", null, label)).lastChild.value = value; }

  // ---- tabs ---------------------------------------------------------------------------------------------
  var panels = {};
  Array.prototype.forEach.call(document.querySelectorAll("[data-panel]"), function (panel) {
    panels[panel.getAttribute("data-panel")] = panel;
  });
  function show(name) {
    Object.keys(panels).forEach(function (key) { panels[key].hidden = key !== name; });
    Array.prototype.forEach.call(document.querySelectorAll("[data-tab]"), function (tab) {
      tab.setAttribute("aria-selected", tab.getAttribute("data-tab") === name ? "true" : "false");
    });
  }
  Array.prototype.forEach.call(document.querySelectorAll("[data-tab]"), function (tab) {
    tab.addEventListener("click", function () { show(tab.getAttribute("data-tab")); });
  });

  // ---- a list that renders its rows in chunks ----------------------------------------------------------
  function LazyList(tbody, more, makeRow) {
    var self = this;
    this.items = [];
    this.shown = 0;
    this.more = function () {
      var end = Math.min(self.items.length, self.shown + CHUNK);
      var fragment = document.createDocumentFragment();
      for (var i = self.shown; i < end; i++) fragment.appendChild(makeRow(self.items[i]));
      tbody.appendChild(fragment);
      self.shown = end;
      more.hidden = self.shown >= self.items.length;
      more.textContent = "Show more (" + (self.items.length - self.shown) + " left)";
    };
    this.set = function (items) {
      self.items = items;
      self.shown = 0;
      tbody.textContent = "";
      self.more();
    };
    more.addEventListener("click", self.more);
    if ("IntersectionObserver" in window) {
      new IntersectionObserver(function (entries) {
        if (entries[0].isIntersecting && self.shown < self.items.length) self.more();
      }, { rootMargin: "400px" }).observe(more);
    }
  }

  // ---- one trajectory, built when its row is opened ----------------------------------------------------
  function field(parent, label, text, cls) {
    if (text === null || text === undefined || text === "") return;
    add(parent, add(el("div", "field " + (cls || "")), el("span", "label", label), el("span", "value", text)));
  }
  function stepView(step) {
    var box = el("div", "step" + (step.parse_error ? " bad" : "") + (step.tool_error ? " tool-error" : ""));
    var head = add(el("div", "step-head"), el("strong", null, "Step " + (step.index + 1)));
    var notes = [];
    if (step.final_only) notes.push("final only");
    if (step.attempts > 1) notes.push(step.attempts + " attempts");
    if (step.finish_reason && step.finish_reason !== "stop") notes.push("finish: " + step.finish_reason);
    notes.push("tokens " + step.tokens[0] + " prompt (" + step.tokens[1] + " cached), " + step.tokens[2] + " generated");
    notes.push(fixed(step.seconds, 2) + " s");
    add(head, el("span", "muted", notes.join(" · ")));
    add(box, head);
    if (step.path) field(box, "ActionPath", step.path.join(" -> "));
    field(box, "Thought", step.thought);
    if (step.action) {
      var argument = typeof step.argument === "string" ? step.argument : JSON.stringify(step.argument);
      field(box, "Action", step.action + "[" + argument + "]", "action");
      if (step.hop) field(box, "Hop", step.hop.bridge + ", read in step " + (step.hop.read_at + 1), "hop");
    }
    if (step.observation !== null && step.observation !== undefined) {
      add(box, add(el("div", "field"), el("span", "label", step.tool_error ? "Observation (tool error)" : "Observation"),
        el("pre", "observation", step.observation)));
    }
    field(box, "Final", step.final, "final");
    if (step.parse_error) {
      var error = step.parse_error;
      var where = error.line ? " (line " + error.line + ", column " + error.column + ")" : "";
      field(box, "Parse error", (error.label || "error") + ": " + (error.message || "") + where, "error");
    }
    if (step.raw !== undefined) {
      add(box, add(el("div", "field"), el("span", "label", "Raw text"), el("pre", "raw", step.raw)));
    }
    if (step.rejections && step.rejections.length) {
      field(box, "Grammar rejections", step.rejections.length + ": " + step.rejections.map(function (r) {
        return JSON.stringify(r[1]) + " at " + r[0];
      }).join(", "));
    }
    if (step.prevented) field(box, "Prevented moves", step.prevented);
    if (step.details && Object.keys(step.details).length) {
      var more = el("details");
      add(more, el("summary", null, "details"), el("pre", "raw", JSON.stringify(step.details, null, 1)));
      add(box, more);
    }
    return box;
  }
  function trajectoryData(i) {
    var block = document.getElementById("t" + i);
    return block ? JSON.parse(block.textContent) : null;
  }
  function trajectoryView(i) {
    var row = D.rows[i], t = trajectoryData(i), q = D.questions[row.q];
    var box = el("div", "traj");
    if (!t) { // opened before the page finished loading: the blocks after this script are not parsed yet
      add(box, el("p", "muted", "Loading…"));
      document.addEventListener("DOMContentLoaded", function () { box.parentNode.replaceChild(trajectoryView(i), box); });
      return box;
    }
    var head = el("div", "traj-head");
    add(head, el("strong", null, D.runs[row.r].name), el("span", "muted", " · " + q.id));
    add(box, head);
    field(box, "Question", q.q);
    field(box, "Gold", q.gold);
    field(box, "Prediction", answer(row), outcomeOf(row));
    var facts = "EM " + score(row.em) + " · F1 " + score(row.f1) + " · stop " + row.stop + " · " + row.steps +
      " steps · " + fixed(row.s, 1) + " s · tokens " + row.tok[0] + " prompt (" + (row.tok[1] === null ? "n/a" : row.tok[1]) + " cached), " +
      row.tok[2] + " generated";
    if (row.sp !== null) facts += " · SP F1 " + score(row.sp) + " · joint F1 " + score(row.jf1);
    field(box, "Scores", facts);
    field(box, "Stopped", t.error, "error");
    if (!t.steps.length) add(box, el("p", "muted", "No steps were recorded."));
    t.steps.forEach(function (step) { add(box, stepView(step)); });
    return box;
  }
  function toggle(tr, columns, build) {
    var next = tr.nextSibling;
    if (next && next.classList.contains("detail")) {
      next.parentNode.removeChild(next);
      tr.setAttribute("aria-expanded", "false");
      return;
    }
    var detail = el("tr", "detail");
    var cell = el("td");
    cell.colSpan = columns;
    add(detail, add(cell, build()));
    tr.parentNode.insertBefore(detail, tr.nextSibling);
    tr.setAttribute("aria-expanded", "true");
  }
  function clickable(tr, handler) {
    tr.tabIndex = 0;
    tr.setAttribute("aria-expanded", "false");
    tr.addEventListener("click", handler);
    tr.addEventListener("keydown", function (event) {
      if (event.key === "Enter" || event.key === " ") { event.preventDefault(); handler(); }
    });
  }
  function cells(tr, values) {
    values.forEach(function (value) {
      if (value instanceof Node) add(tr, add(el("td"), value)); else add(tr, el("td", null, value));
    });
    return tr;
  }

  // ---- the questions view ------------------------------------------------------------------------------
  var filters = {
    run: document.getElementById("filter-run"),
    type: document.getElementById("filter-type"),
    level: document.getElementById("filter-level"),
    outcome: document.getElementById("filter-outcome"),
    stop: document.getElementById("filter-stop"),
    text: document.getElementById("filter-text")
  };
  D.runs.forEach(function (run, number) { option(filters.run, String(number), run.name); });
  function distinct(values) {
    return values.filter(function (v, i, all) { return v !== null && all.indexOf(v) === i; }).sort();
  }
  distinct(D.questions.map(function (q) { return q.type; })).forEach(function (v) { option(filters.type, v, v); });
  distinct(D.questions.map(function (q) { return q.level; })).forEach(function (v) { option(filters.level, v, v); });
  distinct(D.rows.map(function (r) { return r.stop; })).forEach(function (v) { option(filters.stop, v, v); });
  filters.type.disabled = filters.type.options.length < 2;
  filters.level.disabled = filters.level.options.length < 2;

  var haystacks = null; // lowercased text of each row, made on the first text search
  function haystack(i) {
    if (!haystacks) haystacks = new Array(D.rows.length);
    if (haystacks[i] === undefined) {
      var row = D.rows[i], q = D.questions[row.q];
      haystacks[i] = [q.id, q.q, q.gold, row.p || ""].join("\n").toLowerCase();
    }
    return haystacks[i];
  }
  var rowCount = document.getElementById("row-count");
  var questionList = new LazyList(document.getElementById("rows"), document.getElementById("rows-more"), function (i) {
    var row = D.rows[i], q = D.questions[row.q];
    var tr = el("tr", "qrow " + outcomeOf(row));
    tr.setAttribute("data-row", String(i));
    cells(tr, [D.runs[row.r].name, q.id, q.q, q.gold, answer(row), score(row.em), score(row.f1),
      q.type || "", q.level || "", row.stop, row.steps, fixed(row.s, 1)]);
    clickable(tr, function () { toggle(tr, 12, function () { return trajectoryView(i); }); });
    return tr;
  });
  function applyFilters() {
    var run = filters.run.value, type = filters.type.value, level = filters.level.value;
    var outcome = filters.outcome.value, stop = filters.stop.value;
    var text = filters.text.value.trim().toLowerCase();
    var out = [];
    for (var i = 0; i < D.rows.length; i++) {
      var row = D.rows[i], q = D.questions[row.q];
      if (run && String(row.r) !== run) continue;
      if (type && q.type !== type) continue;
      if (level && q.level !== level) continue;
      if (outcome && outcomeOf(row) !== outcome) continue;
      if (stop && row.stop !== stop) continue;
      if (text && haystack(i).indexOf(text) < 0) continue;
      out.push(i);
    }
    questionList.set(out);
    rowCount.textContent = out.length + " of " + D.rows.length + " rows";
  }
  ["run", "type", "level", "outcome", "stop"].forEach(function (key) {
    filters[key].addEventListener("change", applyFilters);
  });
  var typing = null;
  filters.text.addEventListener("input", function () {
    clearTimeout(typing);
    typing = setTimeout(applyFilters, 150);
  });

  // ---- two runs side by side ---------------------------------------------------------------------------
  var byRun = D.runs.map(function () { return {}; }); // run -> question index -> row index
  D.rows.forEach(function (row, i) { byRun[row.r][row.q] = i; });
  var pickA = document.getElementById("compare-a"), pickB = document.getElementById("compare-b");
  var pickDirection = document.getElementById("compare-direction");
  var summary = document.getElementById("compare-summary");
  D.runs.forEach(function (run, number) {
    option(pickA, String(number), run.name);
    option(pickB, String(number), run.name);
  });
  pickB.value = D.runs.length > 1 ? "1" : "0";
  function direction(a, b) { return (a.em ? "right" : "wrong") + "->" + (b.em ? "right" : "wrong"); }
  var compareList = new LazyList(document.getElementById("compare-rows"), document.getElementById("compare-more"),
    function (pair) {
      var a = D.rows[pair[0]], b = D.rows[pair[1]], q = D.questions[a.q];
      var tr = el("tr", "qrow " + pair[2].replace("->", "-to-"));
      cells(tr, [q.id, q.q, q.gold, answer(a) + " (F1 " + score(a.f1) + ")", answer(b) + " (F1 " + score(b.f1) + ")",
        pair[2].replace("->", " \u2192 ") + (pair[3] ? "" : " (same answer)")]);
      clickable(tr, function () {
        toggle(tr, 6, function () { return add(el("div", "side"), trajectoryView(pair[0]), trajectoryView(pair[1])); });
      });
      return tr;
    });
  function applyCompare() {
    var a = Number(pickA.value), b = Number(pickB.value), wanted = pickDirection.value;
    var pairs = [], counts = {}, common = 0, changed = 0;
    Object.keys(byRun[a]).forEach(function (q) {
      if (byRun[b][q] === undefined) return;
      common++;
      var ra = D.rows[byRun[a][q]], rb = D.rows[byRun[b][q]];
      var moved = norm(ra.p) !== norm(rb.p) || (ra.p === null) !== (rb.p === null);
      var way = direction(ra, rb);
      if (moved) { changed++; counts[way] = (counts[way] || 0) + 1; }
      if (wanted === "all" || (moved && (wanted === "changed" || wanted === way))) {
        pairs.push([byRun[a][q], byRun[b][q], way, moved]);
      }
    });
    pairs.sort(function (x, y) { return D.rows[x[0]].q - D.rows[y[0]].q; });
    compareList.set(pairs);
    summary.textContent = common + " questions in both runs; the answer changed on " + changed + ": " +
      (counts["wrong->right"] || 0) + " wrong \u2192 right, " + (counts["right->wrong"] || 0) + " right \u2192 wrong, " +
      (counts["wrong->wrong"] || 0) + " wrong \u2192 wrong (another wrong answer). Showing " + pairs.length + ".";
  }
  [pickA, pickB, pickDirection].forEach(function (select) { select.addEventListener("change", applyCompare); });

  applyFilters();
  applyCompare();
  show("overview");
  performance.mark("report-ready");
  document.body.setAttribute("data-ready", "1");
})();
