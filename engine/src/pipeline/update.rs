//! Update pipelines (MongoDB 4.2+ "updates with an aggregation pipeline"): an update given
//! as an array of stages, run on each matched measurement (or on the document an upsert
//! builds from the filter). Only the stages that take one document at a time are allowed —
//! `$addFields`/`$set`, `$project`, `$unset`, `$replaceRoot`/`$replaceWith` — parsed once
//! with the aggregation pipeline's own stage code. Their expressions read `$$ROOT` /
//! `$$CURRENT` (the measurement), `$$NOW` (one date for the whole update) and the update's
//! `let` variables, put in as constants before the stages are parsed.

use bson::{Bson, Document};

use super::bind::bind_stage;
use super::stage::Stage;
use crate::error::{Error, ErrorCode, Result};

/// A parsed update pipeline.
pub(crate) struct UpdatePipeline {
    stages: Vec<Stage>,
}

impl std::fmt::Debug for UpdatePipeline {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("UpdatePipeline")
            .field("stages", &self.stages.len())
            .finish()
    }
}

impl UpdatePipeline {
    /// Parses the stages of an update pipeline, with the variables `vars` (name, value;
    /// `None` for missing) put in where the stages read them as `$$<name>`.
    ///
    /// # Errors
    /// `InvalidOptions` for a stage MongoDB does not allow in an update ("$match is not
    /// allowed to be used within an update"); the stage's own errors for a malformed one.
    pub(crate) fn parse(
        stages: &[Document],
        vars: &[(String, Option<Bson>)],
    ) -> Result<UpdatePipeline> {
        let bound: Vec<(&str, Option<&Bson>)> =
            vars.iter().map(|(n, v)| (n.as_str(), v.as_ref())).collect();
        let stages = stages
            .iter()
            .map(|d| {
                // A stage is parsed first (a malformed or unknown one fails as in `aggregate`),
                // then refused when an update does not allow it.
                let stage = if bound.is_empty() {
                    Stage::parse(d)?
                } else {
                    Stage::parse(&bind_stage(d, &bound))?
                };
                if stage.allowed_in_update() {
                    Ok(stage)
                } else {
                    Err(not_allowed(d.keys().next().map_or("", String::as_str)))
                }
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(UpdatePipeline { stages })
    }

    /// Runs the pipeline on `doc`: the new document. The `_id` is immutable: a result
    /// without one gets `doc`'s back (first), as MongoDB keeps it.
    ///
    /// # Errors
    /// A stage's error; `ImmutableField` when the result's `_id` differs from `doc`'s.
    pub(crate) fn apply(&self, doc: &Document) -> Result<Document> {
        let mut out = doc.clone();
        for stage in &self.stages {
            out = stage.apply_one(out)?;
        }
        match (doc.get("_id"), out.get("_id")) {
            (Some(old), Some(new)) if old != new => Err(Error::rejected(
                ErrorCode::ImmutableField,
                format!(
                    "performing an update on the path '_id' would modify the immutable field '_id' (from {old} to {new})"
                ),
            )),
            (Some(old), None) => {
                let mut with_id = Document::new();
                with_id.insert("_id", old.clone());
                with_id.extend(out);
                Ok(with_id)
            }
            _ => Ok(out),
        }
    }
}

fn not_allowed(name: &str) -> Error {
    Error::rejected(
        ErrorCode::InvalidOptions,
        format!(
            "{name} is not allowed to be used within an update (allowed: $addFields, $set, $project, $unset, $replaceRoot, $replaceWith)"
        ),
    )
}
