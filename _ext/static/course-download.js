// The theme's download menu (see _ext/course_site.py): its items save the file. As plain
// links, a page opened from a file, or a server that sends .ipynb as application/json,
// shows the notebook as a tab of JSON instead. Each item gets a `download` attribute with
// the file's name, and a click saves the file from a Blob under that name:
// - over http(s), the file fetched, whatever type and disposition the server sends;
// - from a file:// page, where Chromium ignores `download` (each file is its own origin)
//   and fetch is refused, the file's text from the script the build writes next to it,
//   `<file>.js` (a <script> loads from a file page, and a Blob saves from one).
// When neither works, the link is followed as before.
(function () {
  "use strict";

  function fileName(href) {
    const path = new URL(href, location.href).pathname;
    return decodeURIComponent(path.slice(path.lastIndexOf("/") + 1));
  }

  function save(blob, name) {
    const url = URL.createObjectURL(blob);
    const a = document.createElement("a");
    a.href = url;
    a.download = name;
    a.hidden = true;
    document.body.appendChild(a);
    a.click();
    a.remove();
    // the browser has taken the Blob once the download starts; free it a while later
    setTimeout(() => URL.revokeObjectURL(url), 60_000);
  }

  function follow(link) {  // the plain link, with its download attribute
    const a = document.createElement("a");
    a.href = link.href;
    a.download = link.getAttribute("download");
    a.hidden = true;
    document.body.appendChild(a);
    a.click();
    a.remove();
  }

  function fetched(href) {
    return fetch(href, { credentials: "same-origin" }).then((r) => {
      if (!r.ok) throw new Error(r.status + " " + r.statusText);
      return r.blob();
    });
  }

  function scripted(href) {  // the build's <file>.js sets self.courseDownloads[<file's URL>]
    const have = () => (self.courseDownloads || {})[href];
    if (typeof have() === "string") return Promise.resolve(new Blob([have()]));
    return new Promise((resolve, reject) => {
      const script = document.createElement("script");
      script.src = href + ".js";
      script.onload = () => {
        script.remove();
        typeof have() === "string" ? resolve(new Blob([have()])) : reject(new Error(href));
      };
      script.onerror = () => { script.remove(); reject(new Error(href)); };
      document.head.appendChild(script);
    });
  }

  function prepare(link) {
    const href = link.getAttribute("href");
    if (!href || href.startsWith("#") || href.startsWith("javascript:")) return;
    const name = fileName(link.href);
    if (!name) return;
    link.setAttribute("download", name);
    link.removeAttribute("target");  // a new tab would stay open, empty, after the download
    link.addEventListener("click", (event) => {
      if (event.button !== 0 || event.ctrlKey || event.metaKey || event.shiftKey || event.altKey) return;
      const http = /^https?:$/.test(location.protocol);
      if (!http && location.protocol !== "file:") return;
      event.preventDefault();
      (http ? fetched(link.href) : scripted(link.href))
        .then((blob) => save(blob, name))
        .catch(() => follow(link));
    });
  }

  function init() {
    document.querySelectorAll(".dropdown-download-buttons a[href]").forEach(prepare);
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", init);
  else init();
})();
