// The in-page Python (see _ext/course_runner.py): Pyodide's core runtime, served from this
// site's own _static/pyodide/, in a Web Worker, so a long or endless loop never freezes the
// page (Stop ends the worker). Messages in and out are plain data:
//   {id, kind: "run", sources: [code, ...]}          -> {id, stdout, error}
//   {id, kind: "check", code: {grade_id: source}}    -> {id, lines, failed}
// autograder.inpage does the work; this file only starts Python and passes text.
import { loadPyodide } from "./pyodide/pyodide.mjs";

const here = new URL(".", import.meta.url);
let ready = null;

async function start() {
  const pyodide = await loadPyodide({ indexURL: new URL("pyodide/", here).href });
  const data = await (await fetch(new URL("course-runner.json", here))).json();
  for (const [path, text] of Object.entries(data.files)) {
    const full = "/home/pyodide/course/" + path;
    pyodide.FS.mkdirTree(full.slice(0, full.lastIndexOf("/")));
    pyodide.FS.writeFile(full, text);
  }
  pyodide.runPython("import sys; sys.path.insert(0, '/home/pyodide/course')");
  const inpage = pyodide.pyimport("autograder.inpage");
  return { pyodide, inpage, exercise: data.exercise };
}

function plain(proxy) {
  const value = proxy.toJs({ dict_converter: Object.fromEntries });
  proxy.destroy();
  return value;
}

self.onmessage = async (event) => {
  const { id, kind } = event.data;
  try {
    ready = ready || start();
    const { pyodide, inpage, exercise } = await ready;
    if (kind === "run") {
      const result = plain(inpage.run_cells(pyodide.toPy(event.data.sources)));
      self.postMessage({ id, stdout: result.stdout, error: result.error });
    } else if (kind === "check") {
      const result = plain(inpage.check_exercise(pyodide.toPy(exercise.notebook),
        pyodide.toPy(event.data.code), pyodide.toPy(exercise.spec)));
      self.postMessage({ id, lines: result.lines, failed: result.failed });
    }
  } catch (err) {
    self.postMessage({ id, error: "the in-page Python failed: " + err });
  }
};
