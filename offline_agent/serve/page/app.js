// The page of `offline-agent serve`: pick an index, ask, watch the steps arrive, read the answer and open the
// passages its sources cite; follow-ups go in the same conversation. Everything it shows is set as text
// (textContent), never as HTML, so a document holding markup shows the markup. It loads nothing from elsewhere.
"use strict";

const conversation = { messages: [], busy: false };
const $ = (id) => document.getElementById(id);

function element(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined && text !== null) node.textContent = String(text);
  return node;
}

async function errorText(response) {
  try {
    const body = await response.json();
    return (body.error && body.error.message) || `${response.status} ${response.statusText}`;
  } catch (_) {
    return `${response.status} ${response.statusText}`;
  }
}

async function loadModels() {
  const response = await fetch("/v1/models");
  if (!response.ok) {
    $("status").textContent = await errorText(response);
    return;
  }
  const list = (await response.json()).data;
  const select = $("index");
  for (const model of list) {
    const option = element("option", null, `${model.id} (${model.offline_agent.passages} passages)`);
    option.value = model.id;
    if (model.offline_agent.default) option.selected = true;
    select.append(option);
  }
  document.body.dataset.ready = "1";
}

function newTurn(question) {
  const turn = element("article", "turn");
  turn.append(element("p", "question", question));
  const steps = element("details", "steps");
  steps.open = true;
  steps.append(element("summary", null, "Steps"));
  turn.append(steps);
  $("conversation").append(turn);
  return { turn, steps, step: null, answer: "", end: null };
}

function placeOf(source) {
  if (source.page) return `page ${source.page}`;
  if (source.line) return `line ${source.line}`;
  return "";
}

function label(title, heading) {
  // The title, then the heading path without a first heading that only repeats the title.
  const path = [...(heading || [])];
  if (path.length && path[0] === title) path.shift();
  return [title, ...path].filter(Boolean).join(" › ");
}

function showSources(view, model, sources) {
  if (!sources.length) {
    view.turn.append(element("p", "sources", "Sources: none (the answer is not written word for word in what was read)"));
    return;
  }
  const list = element("ol", "sources");
  for (const source of sources) {
    const item = element("li");
    const place = placeOf(source);
    const open = element("button", "source", place ? `${source.path}, ${place}` : source.path);
    open.type = "button";
    open.dataset.passage = String(source.passage_id);
    open.addEventListener("click", () => openPassage(model, source.passage_id));
    item.append(open);
    const heading = label(source.title, source.heading);
    if (heading) item.append(element("span", "heading", ` ${heading}`));
    item.append(element("span", "sentence", `“${source.sentence}”`));
    list.append(item);
  }
  view.turn.append(list);
}

async function openPassage(model, id) {
  const response = await fetch(`/v1/passages/${encodeURIComponent(model)}/${encodeURIComponent(id)}`);
  const panel = $("passage");
  if (!response.ok) {
    $("passage-title").textContent = "Passage not found";
    $("passage-place").textContent = await errorText(response);
    $("passage-text").textContent = "";
  } else {
    const passage = await response.json();
    $("passage-title").textContent = label(passage.title, passage.heading);
    const place = placeOf(passage);
    $("passage-place").textContent = place ? `${passage.path}, ${place}` : passage.path;
    $("passage-text").textContent = passage.text;
  }
  panel.hidden = false;
  panel.dataset.passage = String(id);
}

function onEvent(view, chunk) {
  const event = chunk.offline_agent || {};
  const delta = (chunk.choices && chunk.choices[0] && chunk.choices[0].delta) || {};
  if (event.event === "step_start") {
    view.step = element("div", "step");
    view.step.dataset.step = String(event.step);
    view.steps.append(view.step);
  } else if (event.event === "token" && view.step) {
    view.step.append(document.createTextNode(delta.reasoning_content || ""));
  } else if (event.event === "observation" && view.step) {
    view.step.append(element("div", event.error ? "observation error" : "observation", `Observation: ${event.text}`));
  } else if (event.event === "end") {
    view.end = event;
  }
  if (typeof delta.content === "string") view.answer += delta.content;
}

async function readStream(response, view) {
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buffer += decoder.decode(value, { stream: true });
    let cut;
    while ((cut = buffer.indexOf("\n\n")) >= 0) {
      const block = buffer.slice(0, cut);
      buffer = buffer.slice(cut + 2);
      for (const line of block.split("\n")) {
        if (!line.startsWith("data: ")) continue;
        const data = line.slice(6);
        if (data === "[DONE]") return;
        const chunk = JSON.parse(data);
        if (chunk.error) throw new Error(chunk.error.message);
        onEvent(view, chunk);
      }
    }
  }
}

async function ask(question) {
  const model = $("index").value;
  const view = newTurn(question);
  conversation.messages.push({ role: "user", content: question });
  conversation.busy = true;
  document.body.dataset.busy = "1";
  $("status").textContent = "Thinking…";
  try {
    const response = await fetch("/v1/chat/completions", {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ model, messages: conversation.messages, stream: true }),
    });
    if (!response.ok) throw new Error(await errorText(response));
    await readStream(response, view);
    const end = view.end || {};
    const answered = end.answer !== null && end.answer !== undefined;
    view.turn.append(element("p", answered ? "answer" : "answer none", answered ? end.answer : view.answer));
    if (answered) showSources(view, model, end.sources || []);
    conversation.messages.push({ role: "assistant", content: view.answer });
    $("status").textContent = end.steps ? `${end.steps} steps, stop reason ${end.stop_reason}` : "";
  } catch (error) {
    conversation.messages.pop();
    view.turn.append(element("p", "error", String(error.message || error)));
    $("status").textContent = "";
  } finally {
    conversation.busy = false;
    delete document.body.dataset.busy;
    view.turn.dataset.done = "1";
  }
}

function start() {
  $("ask").addEventListener("submit", (event) => {
    event.preventDefault();
    const question = $("question").value.trim();
    if (!question || conversation.busy) return;
    $("question").value = "";
    ask(question);
  });
  $("question").addEventListener("keydown", (event) => {
    if (event.key === "Enter" && !event.shiftKey) {
      event.preventDefault();
      $("ask").requestSubmit();
    }
  });
  $("new").addEventListener("click", () => {
    if (conversation.busy) return;
    conversation.messages = [];
    $("conversation").replaceChildren();
    $("status").textContent = "";
  });
  $("index").addEventListener("change", () => {
    conversation.messages = [];  // a conversation is about one index
    $("conversation").replaceChildren();
  });
  $("close").addEventListener("click", () => { $("passage").hidden = true; });
  loadModels().catch((error) => { $("status").textContent = String(error); });
}

start();
