//! The translation-completeness test: every language has every message and attribute of
//! every other, with the same placeholders.

use std::collections::{BTreeMap, BTreeSet};

use fluent_syntax::ast::{Entry, Expression, InlineExpression, Pattern, PatternElement};

use super::SOURCES;

/// Message or term id (with `.attribute`) -> the variables its pattern uses.
type Keys = BTreeMap<String, BTreeSet<String>>;

fn variables_of_inline(e: &InlineExpression<&str>, out: &mut BTreeSet<String>) {
    match e {
        InlineExpression::VariableReference { id } => {
            out.insert(id.name.to_string());
        }
        InlineExpression::FunctionReference { arguments, .. } => {
            for a in &arguments.positional {
                variables_of_inline(a, out);
            }
            for a in &arguments.named {
                variables_of_inline(&a.value, out);
            }
        }
        InlineExpression::Placeable { expression } => variables_of(expression, out),
        _ => {}
    }
}

fn variables_of(e: &Expression<&str>, out: &mut BTreeSet<String>) {
    match e {
        Expression::Select { selector, variants } => {
            variables_of_inline(selector, out);
            for v in variants {
                pattern_variables(&v.value, out);
            }
        }
        Expression::Inline(i) => variables_of_inline(i, out),
    }
}

fn pattern_variables(p: &Pattern<&str>, out: &mut BTreeSet<String>) {
    for el in &p.elements {
        if let PatternElement::Placeable { expression } = el {
            variables_of(expression, out);
        }
    }
}

fn keys(name: &str, text: &'static str) -> Keys {
    let resource = fluent_syntax::parser::parse(text)
        .unwrap_or_else(|(_, errors)| panic!("{name} does not parse: {errors:?}"));
    let mut keys = Keys::new();
    for entry in resource.body {
        let (id, value, attributes) = match entry {
            Entry::Message(m) => (m.id.name.to_string(), m.value, m.attributes),
            Entry::Term(t) => (format!("-{}", t.id.name), Some(t.value), t.attributes),
            Entry::Junk { content } => panic!("{name} has unparsable text: {content}"),
            _ => continue,
        };
        if let Some(v) = value {
            let mut vars = BTreeSet::new();
            pattern_variables(&v, &mut vars);
            assert!(
                keys.insert(id.clone(), vars).is_none(),
                "{name}: {id} twice"
            );
        }
        for a in attributes {
            let mut vars = BTreeSet::new();
            pattern_variables(&a.value, &mut vars);
            keys.insert(format!("{id}.{}", a.id.name), vars);
        }
    }
    keys
}

#[test]
fn every_language_has_every_message_with_the_same_placeholders() {
    // Each area's file in each language, compared with the same area's file in the others.
    let all: Vec<(&str, &str, Keys)> = SOURCES
        .iter()
        .map(|(lang, name, text)| {
            let area = name.strip_prefix(lang.code()).unwrap_or(name);
            (*name, area, keys(name, text))
        })
        .collect();
    let mut problems = vec![];
    for (_, area, _) in &all {
        for lang in super::Lang::ALL {
            let name = format!("{}{area}", lang.code());
            if !all.iter().any(|(n, ..)| *n == name) {
                problems.push(format!("{name} is missing"));
            }
        }
    }
    for (name, area, k) in &all {
        for (other, _, ok) in all.iter().filter(|(_, a, _)| a == area) {
            for (key, vars) in ok {
                match k.get(key) {
                    None => problems.push(format!("{name} lacks {key} (in {other})")),
                    Some(v) if v != vars => problems.push(format!(
                        "{key}: {name} uses {v:?} but {other} uses {vars:?}"
                    )),
                    Some(_) => {}
                }
            }
        }
    }
    // A message id belongs to one area: the bundle refuses a second.
    let mut seen = BTreeMap::new();
    for (name, _, k) in &all {
        let lang = &name[..2];
        for key in k.keys() {
            if let Some(first) = seen.insert((lang, key.clone()), *name)
                && first != *name
            {
                problems.push(format!("{key} is in both {first} and {name}"));
            }
        }
    }
    problems.sort();
    problems.dedup();
    assert!(
        problems.is_empty(),
        "translations differ:\n{}",
        problems.join("\n")
    );
}

#[test]
fn every_key_the_code_uses_exists() {
    // Keys named in templates and code as string literals: `t("key")`, `t1("key"`, ...
    let mut en = Keys::new();
    for (lang, name, text) in SOURCES {
        if *lang == super::Lang::En {
            en.extend(keys(name, text));
        }
    }
    let mut missing = vec![];
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = vec![];
    let mut dirs = vec![root.join("templates"), root.join("src")];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).expect("a source folder").flatten() {
            let path = entry.path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "html" || e == "rs") {
                files.push(path);
            }
        }
    }
    for path in files {
        let text = std::fs::read_to_string(&path).expect("a readable source");
        let file = path.strip_prefix(root).unwrap_or(&path).display();
        for prefix in [
            "t(\"",
            "t1(\"",
            "t2(\"",
            "ta(\"",
            "message(lang, \"",
            "Said::new(\"",
        ] {
            for (i, _) in text.match_indices(prefix) {
                let rest = &text[i + prefix.len()..];
                let before = text[..i].chars().next_back();
                if before.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_') {
                    continue;
                }
                let Some(end) = rest.find('"') else { continue };
                let key = &rest[..end];
                if key.contains('-')
                    && key
                        .chars()
                        .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '.')
                    && !en.contains_key(key)
                {
                    missing.push(format!("{file}: {key}"));
                }
            }
        }
    }
    assert!(
        missing.is_empty(),
        "keys missing from the files:\n{}",
        missing.join("\n")
    );
}

/// The Rust sources under `src/`, as (path relative to the crate, text).
fn rust_sources() -> Vec<(String, String)> {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut out = vec![];
    let mut dirs = vec![root.join("src")];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).expect("a source folder").flatten() {
            let path = entry.path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                let text = std::fs::read_to_string(&path).expect("a readable source");
                let name = path
                    .strip_prefix(root)
                    .unwrap_or(&path)
                    .display()
                    .to_string();
                out.push((name.replace('\\', "/"), text));
            }
        }
    }
    out
}

/// The text between the bracket that opens at `open` and its match, skipping string
/// literals.
fn bracketed(text: &str, open: usize) -> &str {
    let mut depth = 0;
    let mut in_string = false;
    let mut escaped = false;
    for (i, c) in text[open..].char_indices() {
        if in_string {
            match (escaped, c) {
                (true, _) => escaped = false,
                (false, '\\') => escaped = true,
                (false, '"') => in_string = false,
                _ => {}
            }
            continue;
        }
        match c {
            '"' => in_string = true,
            '(' | '{' | '[' => depth += 1,
            ')' | '}' | ']' => {
                depth -= 1;
                if depth == 0 {
                    return &text[open + 1..open + i];
                }
            }
            _ => {}
        }
    }
    &text[open..]
}

#[test]
fn page_refusals_come_from_the_message_files() {
    // A refusal a page can show is written in the page's language: its message comes from a
    // Fluent key (`t`, `t1`, ... or a helper that calls them), never an English literal. The
    // API still answers in English, since `i18n::current()` is English outside pages.
    // Code that only the API, the node agents, Slurm's import or the command line reaches
    // keeps its English sentences.
    const API_OR_CLI: &[&str] = &[
        "src/web/api/",
        "src/runs/agents.rs",
        "src/executor/",
        "src/main.rs",
        "src/demo.rs",
        "src/bench.rs",
        "src/sim/",
    ];
    // (file, words of the message): English sentences outside pages in files pages share.
    const ALLOWED: &[(&str, &str)] = &[
        // `tranche nodes declare` (the command line).
        ("src/db/inventory.rs", "declare 1 to 1024 nodes"),
        ("src/db/inventory.rs", "no cluster named"),
        // A JSON body (the API).
        ("src/web/input.rs", "as JSON"),
        // The API's Idempotency-Key; the run form says it with `run-form-resent`.
        ("src/runs/mod.rs", "Idempotency-Key was already used"),
        // The API's Idempotency-Key of a contract purchase (the page uses a preview token).
        (
            "src/ledger/contracts.rs",
            "Idempotency-Key was already used",
        ),
        ("src/ledger/contracts.rs", "Idempotency-Key is being used"),
    ];
    const VARIANTS: &[&str] = &[
        "Forbidden",
        "NotFound",
        "Conflict",
        "Invalid",
        "invalid",
        "InvalidText",
        "Refused",
        "Unprocessable",
        "idempotency_mismatch",
        "Malformed",
        "BadShape",
    ];
    const MESSAGE_FUNCTIONS: &[&str] = &["t", "t1", "t2", "ta", "message", "too_long"];
    let mut english = vec![];
    for (file, text) in rust_sources() {
        if API_OR_CLI.iter().any(|p| file.starts_with(p)) {
            continue;
        }
        for (at, _) in text.match_indices("AppError::") {
            let rest = &text[at + "AppError::".len()..];
            let name_len = rest
                .find(|c: char| !c.is_ascii_alphanumeric() && c != '_')
                .unwrap_or(rest.len());
            if !VARIANTS.contains(&&rest[..name_len]) {
                continue;
            }
            let after = &rest[name_len..];
            let trimmed = after.trim_start();
            if !trimmed.starts_with(['(', '{']) {
                continue;
            }
            let open = at + "AppError::".len() + name_len + (after.len() - trimmed.len());
            let body = bracketed(&text, open);
            let calls_message = MESSAGE_FUNCTIONS.iter().any(|f| {
                body.match_indices(&format!("{f}(")).any(|(i, _)| {
                    !body[..i]
                        .chars()
                        .next_back()
                        .is_some_and(|c| c.is_ascii_alphanumeric() || c == '_')
                })
            });
            // A sentence: a string literal with a space in it (field names and codes have
            // none).
            let sentence = body.split('"').skip(1).step_by(2).find(|s| s.contains(' '));
            let Some(sentence) = sentence else { continue };
            if calls_message
                || ALLOWED
                    .iter()
                    .any(|(f, words)| *f == file && sentence.contains(words))
            {
                continue;
            }
            let line = text[..at].matches('\n').count() + 1;
            english.push(format!("{file}:{line}: {sentence:?}"));
        }
    }
    assert!(
        english.is_empty(),
        "English refusals a page can show (give them a Fluent key):\n{}",
        english.join("\n")
    );
}

#[test]
fn spanish_speaks_to_the_reader_as_tu_throughout() {
    // The Spanish pages address the reader informally (tú: "tu cuenta", "pide a un
    // administrador"), as docs/i18n.md says; a formal word ("usted", its imperatives) beside
    // them reads as two voices on one page.
    let formal = [
        "usted",
        "ustedes",
        "cambie ",
        "pulse ",
        "elija ",
        "escriba ",
        "consulte ",
        "inicie ",
        "vuelva a intentarlo",
        "pida ",
        "cópielo",
        "introduzca ",
        "seleccione ",
    ];
    for (lang, name, text) in SOURCES {
        if *lang != super::Lang::Es {
            continue;
        }
        let lower = text.to_lowercase();
        for word in formal {
            let at = lower.find(word);
            assert!(
                at.is_none(),
                "{name}: the formal \"{word}\" in: {}",
                lower[at.unwrap_or(0)..].lines().next().unwrap_or_default()
            );
        }
    }
}
