"""The crate the grader builds from ex08's ``%%rust`` cells: its root, the cells
``include!``d in notebook order, then the course-written ``main`` (safe Rust, standard
library only) that serves one request per line on stdin with one reply line on stdout
(the protocol: :mod:`autograder.rust_protocol`). The Rust source is a data table."""

from __future__ import annotations

from autograder.rust_source import RustSource

FORBID = "#![forbid(unsafe_code)]"


_MAIN = r'''
#[allow(dead_code, unused_imports)]
mod __course_main {
    //! The course's `main`: one request a line on stdin, one reply line each on stdout
    //! (autograder/rust_protocol.py). Safe Rust, standard library only.
    use std::cell::RefCell;
    use std::fmt::Write as _;
    use std::io::{BufRead, Write};
    use std::panic;

    thread_local! {
        static PANIC: RefCell<(String, String)> = RefCell::new((String::new(), String::new()));
    }

    pub enum Value {
        Num(f64),
        List(Vec<Value>),
    }

    struct Parser<'a> {
        s: &'a [u8],
        i: usize,
    }

    impl<'a> Parser<'a> {
        fn value(&mut self, depth: usize) -> Result<Value, String> {
            if depth > 3 {
                return Err("arguments nested too deeply".to_string());
            }
            if self.s.get(self.i) == Some(&b'[') {
                self.i += 1;
                let mut items = Vec::new();
                if self.s.get(self.i) == Some(&b']') {
                    self.i += 1;
                    return Ok(Value::List(items));
                }
                loop {
                    items.push(self.value(depth + 1)?);
                    match self.s.get(self.i) {
                        Some(b',') => self.i += 1,
                        Some(b']') => {
                            self.i += 1;
                            return Ok(Value::List(items));
                        }
                        _ => return Err(format!("expected ',' or ']' at byte {}", self.i)),
                    }
                }
            }
            let start = self.i;
            while self.i < self.s.len() && !matches!(self.s[self.i], b',' | b']' | b'[') {
                self.i += 1;
            }
            let text = std::str::from_utf8(&self.s[start..self.i])
                .map_err(|_| "arguments are not UTF-8".to_string())?;
            text.parse::<f64>().map(Value::Num).map_err(|_| format!("not a number: {:?}", text))
        }
    }

    fn vector(v: &Value, what: &str) -> Result<Vec<f64>, String> {
        match v {
            Value::List(items) => items
                .iter()
                .map(|x| match x {
                    Value::Num(n) => Ok(*n),
                    Value::List(_) => Err(format!("{} must be a list of numbers", what)),
                })
                .collect(),
            Value::Num(_) => Err(format!("{} must be a list of numbers", what)),
        }
    }

    fn matrix(v: &Value, what: &str) -> Result<Vec<Vec<f64>>, String> {
        match v {
            Value::List(rows) => rows.iter().map(|r| vector(r, what)).collect(),
            Value::Num(_) => Err(format!("{} must be a list of rows", what)),
        }
    }

    fn escape(s: &str) -> String {
        let mut out = String::with_capacity(s.len());
        for c in s.chars() {
            match c {
                '\\' => out.push_str("\\\\"),
                '\n' => out.push_str("\\n"),
                '\r' => out.push_str("\\r"),
                '\t' => out.push_str("\\t"),
                c => out.push(c),
            }
        }
        out
    }

    fn floats(out: &mut String, v: &[f64]) {
        out.push('[');
        for (i, x) in v.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            let _ = write!(out, "{:?}", x);
        }
        out.push(']');
    }

    fn run<F>(f: F, one_row: bool) -> String
    where
        F: FnOnce() -> Result<Vec<Vec<f64>>, String>,
    {
        PANIC.with(|p| *p.borrow_mut() = (String::new(), String::new()));
        match panic::catch_unwind(panic::AssertUnwindSafe(f)) {
            Ok(Ok(rows)) => {
                let mut out = String::from("ok ");
                if one_row {
                    floats(&mut out, rows.first().map(|r| r.as_slice()).unwrap_or(&[]));
                } else {
                    out.push('[');
                    for (i, r) in rows.iter().enumerate() {
                        if i > 0 {
                            out.push(',');
                        }
                        floats(&mut out, r);
                    }
                    out.push(']');
                }
                out
            }
            Ok(Err(msg)) => format!("err {}", escape(&msg)),
            Err(_) => {
                let (msg, place) = PANIC.with(|p| p.borrow().clone());
                format!("panic {}\t{}", escape(&msg), escape(&place))
            }
        }
    }

    fn answer(request: &str) -> String {
        let mut parts = request.splitn(3, ' ');
        let seq = parts.next().unwrap_or("");
        let name = parts.next().unwrap_or("");
        let args = match (Parser { s: parts.next().unwrap_or("").as_bytes(), i: 0 }).value(0) {
            Ok(Value::List(a)) => a,
            Ok(Value::Num(_)) => return format!("{} refused the arguments are not a list", seq),
            Err(e) => return format!("{} refused {}", seq, escape(&e)),
        };
        format!("{} {}", seq, call(name, &args))
    }

    pub fn serve() {
        panic::set_hook(Box::new(|info| {
            let p = info.payload();
            let msg = if let Some(s) = p.downcast_ref::<&str>() {
                s.to_string()
            } else if let Some(s) = p.downcast_ref::<String>() {
                s.clone()
            } else {
                String::from("(a panic without a message)")
            };
            let place = match info.location() {
                Some(l) => format!("{}:{}:{}", l.file(), l.line(), l.column()),
                None => String::new(),
            };
            PANIC.with(|c| *c.borrow_mut() = (msg, place));
        }));
        let stdin = std::io::stdin();
        let mut nonce = String::new();
        if stdin.lock().read_line(&mut nonce).is_err() {
            return;
        }
        let nonce = nonce.trim().to_string();
        let mut line = String::new();
        loop {
            line.clear();
            match stdin.lock().read_line(&mut line) {
                Ok(0) | Err(_) => return,
                Ok(_) => {}
            }
            let request = line.trim_end_matches('\n');
            let reply = match panic::catch_unwind(|| answer(request)) {
                Ok(r) => r,
                Err(_) => String::from("0 refused the course's main panicked"),
            };
            let out = std::io::stdout();
            let mut out = out.lock();
            // A newline first: the learner's own unfinished `print!` ends before the reply.
            if write!(out, "\n{} {}\n", nonce, reply).and_then(|_| out.flush()).is_err() {
                return;
            }
        }
    }

    fn call(name: &str, args: &[Value]) -> String {
        match name {
%(arms)s
            _ => String::from("refused no such function in this program"),
        }
    }
}

fn main() {
    __course_main::serve();
}
'''

_ARMS = {
    "softmax": r'''
            "softmax" => {
                if args.len() != 1 {
                    return String::from("refused softmax takes 1 argument");
                }
                let row = match vector(&args[0], "row") {
                    Ok(r) => r,
                    Err(e) => return format!("refused {}", escape(&e)),
                };
                // The course calls `fn softmax(row: &[f64]) -> Result<Vec<f64>, String>`.
                let softmax: fn(&[f64]) -> Result<Vec<f64>, String> = super::softmax;
                run(move || softmax(&row).map(|w| vec![w]), true)
            }''',
    "scaled_dot_product_attention": r'''
            "scaled_dot_product_attention" => {
                if args.len() != 3 {
                    return String::from("refused scaled_dot_product_attention takes 3 arguments");
                }
                let mut m = Vec::new();
                for (a, what) in args.iter().zip(["Q", "K", "V"]) {
                    match matrix(a, what) {
                        Ok(x) => m.push(x),
                        Err(e) => return format!("refused {}", escape(&e)),
                    }
                }
                let (q, k, v) = (&m[0], &m[1], &m[2]);
                // The course calls `fn scaled_dot_product_attention(q: &[Vec<f64>],
                // k: &[Vec<f64>], v: &[Vec<f64>]) -> Result<Vec<Vec<f64>>, String>`.
                let attention: fn(&[Vec<f64>], &[Vec<f64>], &[Vec<f64>])
                    -> Result<Vec<Vec<f64>>, String> = super::scaled_dot_product_attention;
                run(move || attention(q, k, v), false)
            }''',
}

ROOT = "main.rs"  # the crate root's file name (rustc's messages name it for the glue)


def crate_root(files: list[RustSource], functions: list[str], forbid: bool = False) -> str:
    """The crate root: ``#![forbid(unsafe_code)]`` when ``forbid``, each file
    ``include!``d, then the course's ``main`` with a dispatch arm for each of
    ``functions`` (names of :data:`autograder.rust_source.SIGNATURES`)."""
    head = (FORBID + "\n" if forbid else "") + "#![allow(unused)]\n"
    head += "".join(f'include!("{f.name}");\n' for f in files)
    return head + _MAIN.replace("%(arms)s", "".join(_ARMS[n] for n in functions))
