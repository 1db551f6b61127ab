//! Schemas generated from the official crate's types, compiled once and
//! cached, and the check of one value against one of them.
use super::*;

/// The JSON Schema for `T`, generated like the official `schema.json`.
pub fn schema_value<T: JsonSchema>() -> Value {
    let mut settings = SchemaSettings::draft2020_12();
    settings.untagged_enum_variant_titles = true;
    let mut bool_schemas = ReplaceBoolSchemas::default();
    bool_schemas.skip_additional_properties = true;
    let settings = settings
        .with_transform(RemoveRefSiblings::default())
        .with_transform(bool_schemas);
    let schema = settings.into_generator().into_root_schema_for::<T>();
    serde_json::to_value(&schema).expect("schema serializes")
}

static VALIDATORS: LazyLock<Mutex<HashMap<&'static str, &'static Validator>>> =
    LazyLock::new(|| Mutex::new(HashMap::new()));

/// The compiled validator for `T`, compiled on first use and cached for the
/// life of the test binary.
pub fn validator<T: JsonSchema>() -> &'static Validator {
    let key = std::any::type_name::<T>();
    if let Some(v) = VALIDATORS.lock().unwrap().get(key) {
        return v;
    }
    let schema = schema_value::<T>();
    let mut refs = Vec::new();
    collect_refs(&schema, &mut refs);
    for r in &refs {
        assert!(
            r.starts_with("#/$defs/") || r == "#",
            "schema for {key} has a non-local $ref {r:?}"
        );
        let pointer = &r[1..];
        assert!(
            schema.pointer(pointer).is_some(),
            "schema for {key}: $ref {r:?} does not resolve inside the schema"
        );
    }
    let compiled = jsonschema::options()
        .with_draft(Draft::Draft202012)
        .build(&schema)
        .unwrap_or_else(|e| panic!("schema for {key} does not compile: {e}"));
    let leaked: &'static Validator = Box::leak(Box::new(compiled));
    VALIDATORS.lock().unwrap().entry(key).or_insert(leaked)
}

fn collect_refs(value: &Value, out: &mut Vec<String>) {
    match value {
        Value::Object(map) => {
            for (k, v) in map {
                if (k == "$ref" || k == "$dynamicRef")
                    && let Some(s) = v.as_str()
                {
                    out.push(s.to_owned());
                }
                collect_refs(v, out);
            }
        }
        Value::Array(items) => items.iter().for_each(|v| collect_refs(v, out)),
        _ => {}
    }
}

/// Checks `instance` against a validator; the error lists every failing
/// JSON pointer (relative to `instance`) with the validator's message.
pub fn check_against(validator: &Validator, instance: &Value) -> Result<(), String> {
    let errors: Vec<String> = validator
        .iter_errors(instance)
        .map(|e| {
            let path = e.instance_path().as_str().to_owned();
            let path = if path.is_empty() { "/".into() } else { path };
            format!("at {path}: {}", shorten(&e.to_string(), 400))
        })
        .collect();
    if errors.is_empty() {
        return Ok(());
    }
    let mut msg = errors.join("\n  ");
    // oneOf/anyOf failures only say "not valid under any schema": add the
    // deepest nested failures, which usually name the real problem.
    if msg.contains("oneOf") || msg.contains("anyOf") || msg.contains("any of") {
        let eval = validator.evaluate(instance);
        let mut detail: Vec<(usize, String)> = eval
            .iter_errors()
            .map(|e| {
                let p = e.instance_location.as_str();
                let depth = p.matches('/').count();
                let p = if p.is_empty() { "/" } else { p };
                (
                    depth,
                    format!("at {p}: {}", shorten(e.error.message(), 200)),
                )
            })
            .collect();
        if let Some(max) = detail.iter().map(|(d, _)| *d).max() {
            detail.retain(|(d, _)| *d == max);
            // Fold the per-variant `"x" was expected` lines of a tagged enum
            // into one "expected one of" line per pointer.
            let mut expected: Vec<(String, Vec<String>)> = Vec::new();
            let mut seen = Vec::new();
            for (_, m) in detail {
                if let Some((path, rest)) = m.split_once(": ")
                    && let Some(value) = rest.strip_suffix(" was expected")
                {
                    match expected.iter_mut().find(|(p, _)| p == path) {
                        Some((_, values)) => values.push(value.to_owned()),
                        None => expected.push((path.to_owned(), vec![value.to_owned()])),
                    }
                } else if !seen.contains(&m) {
                    seen.push(m);
                }
            }
            for (path, values) in expected.into_iter().rev() {
                seen.insert(0, format!("{path}: expected one of {}", values.join(", ")));
            }
            let total = seen.len();
            msg.push_str("\n  deepest nested failures:");
            for m in seen.iter().take(8) {
                msg.push_str("\n    ");
                msg.push_str(m);
            }
            if total > 8 {
                msg.push_str(&format!("\n    … and {} more", total - 8));
            }
        }
    }
    Err(msg)
}
