//! Hand-offs: a spec may not declare a part of its table that its own, its
//! schema's or its target's `handOff` gives to another tool. Each such field
//! is one error naming the hand-off that covers it and who owns the part.

use super::super::crd::{DeltaTableSpec, HandOffSpec, HandedSpec};
use super::super::error::SpecError;
use super::super::load::Manifests;
use super::super::lower::schema_of;

/// Each field of `spec` that `hand_off` (declared by `by`, e.g. "the
/// DeltaSchema 'sales'") covers, as an error at that field.
pub fn declared_hand_offs(
    spec: &DeltaTableSpec,
    hand_off: &HandOffSpec,
    by: &str,
) -> Vec<SpecError> {
    let to = hand_off.to.as_deref().unwrap_or("another tool");
    let mut out = Vec::new();
    let mut refuse = |path: String, aspect: &str, what: &str| {
        out.push(SpecError::new(
            path,
            format!("this table's {what}: handed off to {to} by {by} (spec.handOff)"),
            format!(
                "remove it: {to} owns them, and the operator never changes them; or take them back by removing {aspect} from that handOff"
            ),
        ))
    };
    for a in &hand_off.aspects {
        let aspect = format!("{a:?}");
        match a {
            HandedSpec::Tags => {
                if !spec.tags.is_empty() {
                    refuse("spec.tags".into(), &aspect, "tags");
                }
                for (i, c) in spec.columns.iter().enumerate() {
                    if !c.tags.is_empty() {
                        refuse(format!("spec.columns[{i}].tags"), &aspect, "tags");
                    }
                }
            }
            HandedSpec::Grants if !spec.grants.is_empty() => {
                refuse("spec.grants".into(), &aspect, "grants")
            }
            HandedSpec::Owner if spec.owner.is_some() => {
                refuse("spec.owner".into(), &aspect, "owner")
            }
            HandedSpec::Comments => {
                if spec.comment.is_some() {
                    refuse("spec.comment".into(), &aspect, "comments");
                }
                for (i, c) in spec.columns.iter().enumerate() {
                    if c.comment.is_some() {
                        refuse(format!("spec.columns[{i}].comment"), &aspect, "comments");
                    }
                }
            }
            HandedSpec::Masks => {
                for (i, c) in spec.columns.iter().enumerate() {
                    if c.mask.is_some() {
                        refuse(format!("spec.columns[{i}].mask"), &aspect, "column masks");
                    }
                }
            }
            HandedSpec::Checks => {
                for (i, c) in spec.constraints.iter().enumerate() {
                    if c.check.is_some() {
                        refuse(
                            format!("spec.constraints[{i}].check"),
                            &aspect,
                            "CHECK constraints",
                        );
                    }
                }
            }
            _ => {}
        }
    }
    for key in spec.properties.keys() {
        if let Some(p) = hand_off
            .properties
            .iter()
            .find(|p| key.starts_with(p.as_str()))
        {
            refuse(
                format!("spec.properties.{key}"),
                &format!("the prefix '{p}'"),
                &format!("properties '{p}*'"),
            );
        }
    }
    out
}

/// A hand-off's own fields: property prefixes are not empty.
pub(super) fn check_hand_off(h: &HandOffSpec, path: &str, e: &mut Vec<SpecError>) {
    for (i, p) in h.properties.iter().enumerate() {
        if p.trim().is_empty() {
            e.push(SpecError::new(
                format!("{path}.properties[{i}]"),
                "an empty prefix would hand off every property",
                "name the prefix of the keys the other tool sets, e.g. 'pipelines.'",
            ));
        }
    }
}

/// The table's own and its schema's hand-offs, checked against its spec.
pub(super) fn table_and_schema_hand_offs(
    m: &Manifests,
    t: &super::super::load::Loaded<super::super::crd::DeltaTable>,
    e: &mut Vec<SpecError>,
) {
    let spec = &t.resource.spec;
    if let Some(h) = &spec.hand_off {
        check_hand_off(h, "spec.handOff", e);
        e.extend(declared_hand_offs(spec, h, "this table's spec"));
    }
    if let Some(s) = schema_of(m, t)
        && let Some(h) = &s.resource.spec.hand_off
    {
        e.extend(declared_hand_offs(
            spec,
            h,
            &format!("the DeltaSchema '{}'", s.name()),
        ));
    }
}

/// What each table's target hands off (`hand_off_of(target)`, by the schema's
/// `target`), checked against its spec: the CLI and the operator, which have
/// the config, add these to `validate`'s errors.
pub fn handed_off_by_targets(
    m: &Manifests,
    hand_off_of: impl Fn(Option<&str>) -> Option<(String, HandOffSpec)>,
) -> Vec<SpecError> {
    let mut errors = Vec::new();
    for t in &m.tables {
        let Some(s) = schema_of(m, t) else { continue };
        let Some((name, h)) = hand_off_of(s.resource.spec.target.as_deref()) else {
            continue;
        };
        errors.extend(
            declared_hand_offs(&t.resource.spec, &h, &format!("the target '{name}'"))
                .into_iter()
                .map(|x| x.in_file(&t.file, Some(&t.label()))),
        );
    }
    errors
}
