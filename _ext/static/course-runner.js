// Run and Check buttons (see _ext/course_runner.py). Loaded only on pages that have a cell
// marked course-run (chapters) or course-answer (exercise 1); the Python runtime itself
// loads when the reader first presses a button.
(function () {
  "use strict";
  const script = document.currentScript;
  const STATIC = new URL(".", script ? script.src : location.href);
  let worker = null, next = 0;
  const waiting = new Map();  // request id -> {done, limit timer}
  const LIMIT_S = 30;  // a run or check still going after this long is stopped (an endless loop?)
  let loaded = false, loadedBefore = false;  // the runtime is up; it was, before a Stop

  function finish(id, reply) {
    const w = waiting.get(id);
    if (!w) return;
    clearTimeout(w.timer);
    waiting.delete(id);
    w.done(reply);
  }

  function endAll(error) {
    if (worker) worker.terminate();
    worker = null;
    loadedBefore = loadedBefore || loaded;
    loaded = false;
    for (const id of Array.from(waiting.keys())) finish(id, { error });
  }

  function ask(message, onRunning) {
    if (location.protocol === "file:") {
      return Promise.resolve({ error:
        "Browsers do not run WebAssembly in a page opened from a file. Serve the site's " +
        "folder and open it over http, for example:\n  python -m http.server -d _build/html\n" +
        "then open http://127.0.0.1:8000/ and this page from there." });
    }
    if (!worker) {
      worker = new Worker(new URL("course-runner-worker.mjs", STATIC), { type: "module" });
      worker.onmessage = (e) => {
        if (e.data.loaded) {  // the limit counts the reader's code, never the download
          loaded = true;
          for (const w of waiting.values()) w.start();
          return;
        }
        finish(e.data.id, e.data);
      };
      worker.onerror = (e) => endAll("the in-page Python stopped: " + (e.message || e));
    }
    const id = ++next;
    return new Promise((resolve) => {
      const w = { done: resolve, timer: null };
      w.start = () => {
        if (w.timer !== null) return;
        if (onRunning) onRunning();
        w.timer = setTimeout(() => endAll(
          "TIMEOUT: still running after " + LIMIT_S + " s, so it was stopped (an endless " +
          "loop, or one that never ends for some input?). Press the button again to start " +
          "afresh."), LIMIT_S * 1000);
      };
      waiting.set(id, w);
      if (loaded) w.start();
      worker.postMessage({ id, ...message });
    });
  }

  function stop() {  // ends a run or check in progress (and the runtime with it)
    if (waiting.size) endAll("stopped: the in-page Python was ended; press the button again to start it afresh");
  }

  function busy(what) {
    if (loaded) return what + "…";
    return what + (loadedBefore ? "… (restarting Python in this page)"
      : "… (loading Python into this page, about 13 MB, once per visit)");
  }

  function editor(cell, label) {
    const pre = cell.querySelector(".cell_input pre");
    const area = document.createElement("textarea");
    area.className = "course-editor";
    area.spellcheck = false;
    area.setAttribute("aria-label", label);
    area.value = pre.innerText.replace(/\n$/, "");
    area.dataset.original = area.value;
    const fit = () => { area.style.height = "auto"; area.style.height = (area.scrollHeight + 4) + "px"; };
    area.addEventListener("input", fit);
    // Tab moves on to the buttons, as everywhere on the page (no keyboard trap); indent
    // with spaces. Shift+Enter or Ctrl+Enter runs the cell, as in Jupyter.
    area.addEventListener("keydown", (e) => {
      if (e.key === "Enter" && (e.shiftKey || e.ctrlKey) && area.onrun) { e.preventDefault(); area.onrun(); }
    });
    const box = cell.querySelector(".cell_input");
    box.querySelector("div.highlight").hidden = true;
    box.appendChild(area);
    requestAnimationFrame(fit);
    return area;
  }

  function bar(cell, buttons) {
    const div = document.createElement("div");
    div.className = "course-run-bar";
    for (const [text, action] of buttons) {
      const b = document.createElement("button");
      b.type = "button"; b.textContent = text; b.addEventListener("click", action);
      div.appendChild(b);
    }
    const keys = document.createElement("span");
    keys.className = "course-run-keys";
    keys.textContent = "Shift+Enter runs · Tab moves on to the buttons: indent with spaces";
    div.appendChild(keys);
    cell.querySelector(".cell_input").after(div);
    return div;
  }

  function outputArea(after, label) {
    const out = document.createElement("pre");
    out.className = "course-run-output";
    out.setAttribute("role", "status");
    out.setAttribute("aria-live", "polite");
    out.setAttribute("aria-label", label);
    out.hidden = true;
    after.after(out);
    return out;
  }

  function show(out, text, isError) {
    out.hidden = false;
    out.textContent = text;
    out.classList.toggle("course-run-error", !!isError);
  }

  // Chapters: every course-run cell runs after the course-run cells above it, fresh.
  const cells = Array.from(document.querySelectorAll("div.cell.course-run"));
  const editors = cells.map((cell, i) => editor(cell, "code of runnable cell " + (i + 1)));
  cells.forEach((cell, i) => {
    const built = cell.querySelector(".cell_output");
    let out, controls;
    const run = async () => {
      const t0 = performance.now();
      show(out, busy("running"));
      const reply = await ask({ kind: "run", sources: editors.slice(0, i + 1).map((e) => e.value) },
                              () => show(out, "running your code…"));
      if (built) built.hidden = true;
      const text = (reply.stdout || "") + (reply.error ? reply.error : "");
      show(out, text, !!reply.error);
      // A cell that prints nothing still says it ran (CSS, so the text stays the output).
      out.classList.toggle("course-run-empty", text === "");
      out.dataset.ms = String(Math.round(performance.now() - t0));
    };
    const reset = () => {
      editors[i].value = editors[i].dataset.original;
      editors[i].dispatchEvent(new Event("input"));
      out.hidden = true;
      if (built) built.hidden = false;
    };
    controls = bar(cell, [["Run", run], ["Stop", stop], ["Reset", reset]]);
    controls.querySelectorAll("button").forEach((b) => b.setAttribute("aria-label", b.textContent + " runnable cell " + (i + 1)));
    editors[i].onrun = run;
    out = outputArea(controls, "output of runnable cell " + (i + 1));
  });

  // Exercise 1: an editor per solution cell, kept in this browser; Check and Download.
  const answers = Array.from(document.querySelectorAll("div.cell.course-answer"));
  if (!answers.length) return;
  const KEY = "attention-course:" + location.pathname.replace(/[^/]*$/, "") + ":";
  const code = {};
  for (const cell of answers) {
    const id = Array.from(cell.classList).find((c) => c.startsWith("course-id-")).slice(10);
    const area = editor(cell, "your code for " + id);
    const kept = localStorage.getItem(KEY + id);
    if (kept !== null) { area.value = kept; area.dispatchEvent(new Event("input")); }
    area.addEventListener("input", () => localStorage.setItem(KEY + id, area.value));
    code[id] = area;
  }
  const panel = document.createElement("section");
  panel.className = "course-check";
  panel.setAttribute("aria-label", "Check your answers in this page");
  panel.innerHTML = "<h2>Check in this page</h2><p>" + (answers[0].classList.contains("course-whole")
    ? "Runs every test, hidden parts included, and the knowledge checks here, in your " +
      "browser, with the rows <code>python -m autograder check</code> prints in the course " +
      "folder. Your code stays in this browser between visits; Download gives the notebook " +
      "to check there or hand in. Shift+Enter in an editor checks; Tab moves on to the " +
      "buttons, so indent with spaces.</p>"
    : "Runs the visible tests here, in your browser, with the rows <code>python -m " +
      "autograder check</code> prints. Your code stays in this browser between visits. The " +
      "hidden tests and the knowledge checks are scored when your instructor grades. " +
      "Shift+Enter in an editor checks; Tab moves on to the buttons, so indent with " +
      "spaces.</p>");
  const buttons = document.createElement("div");
  buttons.className = "course-run-bar";
  panel.appendChild(buttons);
  const result = document.createElement("pre");
  panel.appendChild(result);
  result.className = "course-run-output course-check-result";
  result.setAttribute("role", "status");
  result.setAttribute("aria-live", "polite");
  result.hidden = true;
  const current = () => Object.fromEntries(Object.entries(code).map(([id, a]) => [id, a.value]));
  const add = (text, action) => {
    const b = document.createElement("button");
    b.type = "button"; b.textContent = text; b.addEventListener("click", action);
    buttons.appendChild(b);
  };
  // The rows appear in this panel, at the top of the exercise: a check started from an
  // editor further down (Shift+Enter) brings the panel into view, where its rows will be.
  const check = async (fromEditor) => {
    show(result, busy("checking"));
    if (fromEditor === true) panel.scrollIntoView({ block: "start" });
    const reply = await ask({ kind: "check", code: current() },
                            () => show(result, "checking your code…"));
    show(result, reply.error ? reply.error : reply.lines.join("\n"), reply.error || reply.failed);
    if (fromEditor === true) panel.scrollIntoView({ block: "start" });
  };
  add("Check", check);
  for (const area of Object.values(code)) area.onrun = () => check(true);  // Shift+Enter
  add("Stop", stop);
  add("Download notebook", async () => {
    const data = await (await fetch(new URL("course-runner.json", STATIC))).json();
    const nb = JSON.parse(JSON.stringify(data.exercise.notebook));
    const mine = current();
    for (const cell of nb.cells) {
      const id = cell.metadata && cell.metadata.nbgrader && cell.metadata.nbgrader.grade_id;
      if (id in mine) cell.source = mine[id];
    }
    const link = document.createElement("a");
    link.href = URL.createObjectURL(new Blob([JSON.stringify(nb, null, 1) + "\n"], { type: "application/x-ipynb+json" }));
    link.download = data.exercise.filename;
    document.body.appendChild(link); link.click(); link.remove();
  });
  (document.querySelector(".course-path") || answers[0]).after(panel);
})();
