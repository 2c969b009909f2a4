//! Pegasus DAX (XML, versions 2.1 and 3.x): `<job id name runtime>` with
//! `<uses file|name link size>`, and `<child ref><parent ref/></child>` edges, which are
//! the truth (files only imply some of them).
//!
//! A DAX may have several jobs write the same logical file (every `mDiffFit` of Montage
//! writes `fit.txt`), so each output is named after its job (`JOB__NAME`), and a job's
//! input is the output of that name of one of its parents (the workflow's own input when
//! no parent writes it).

use super::{WfFile, WfTask, Workflow};
use anyhow::{bail, Context};
use std::collections::HashMap;

/// Parses a DAX document.
pub fn parse(text: &str) -> anyhow::Result<Workflow> {
    let doc = roxmltree::Document::parse(text).context("not an XML document")?;
    let root = doc.root_element();
    if root.tag_name().name() != "adag" {
        bail!(
            "not a Pegasus DAX: the root element is <{}>, not <adag>",
            root.tag_name().name()
        );
    }
    let version = root.attribute("version").unwrap_or("");
    if !(version.starts_with("2.") || version.starts_with("3.")) {
        bail!("DAX version `{version}` is not supported (2.x and 3.x are)");
    }
    let mut tasks: Vec<WfTask> = Vec::new();
    let mut index: HashMap<String, usize> = HashMap::new();
    for job in root.children().filter(|n| n.tag_name().name() == "job") {
        let id = job
            .attribute("id")
            .with_context(|| format!("a <job> without an id (line {})", line(&doc, job)))?
            .to_string();
        let mut task = WfTask {
            runtime_secs: job.attribute("runtime").and_then(|r| r.trim().parse().ok()),
            cores: pegasus_cores(job),
            id: id.clone(),
            ..WfTask::default()
        };
        for uses in job.children().filter(|n| n.tag_name().name() == "uses") {
            let Some(name) = uses.attribute("file").or_else(|| uses.attribute("name")) else {
                continue;
            };
            let file = WfFile {
                name: name.to_string(),
                size: uses.attribute("size").and_then(|s| s.trim().parse().ok()),
            };
            match uses.attribute("link") {
                Some("output") => task.outputs.push(file),
                Some("input") => task.inputs.push(file),
                _ => {}
            }
        }
        if index.insert(id.clone(), tasks.len()).is_some() {
            bail!("two jobs have the id `{id}`");
        }
        tasks.push(task);
    }
    for child in root.children().filter(|n| n.tag_name().name() == "child") {
        let c = child.attribute("ref").context("a <child> without a ref")?;
        let &ci = index
            .get(c)
            .with_context(|| format!("<child ref=\"{c}\">: no job has that id"))?;
        for parent in child.children().filter(|n| n.tag_name().name() == "parent") {
            let p = parent
                .attribute("ref")
                .context("a <parent> without a ref")?;
            if !tasks[ci].parents.iter().any(|q| q == p) {
                tasks[ci].parents.push(p.to_string());
            }
        }
    }
    name_files_by_job(&mut tasks, &index);
    Ok(Workflow {
        name: root.attribute("name").unwrap_or("dax").to_string(),
        tasks,
        ..Workflow::default()
    })
}

/// A job's `<profile namespace="pegasus" key="cores">N</profile>`, if it has one.
fn pegasus_cores(job: roxmltree::Node<'_, '_>) -> Option<f64> {
    job.children()
        .filter(|n| n.tag_name().name() == "profile")
        .find(|n| {
            n.attribute("namespace") == Some("pegasus") && n.attribute("key") == Some("cores")
        })
        .and_then(|n| n.text()?.trim().parse().ok())
}

fn line(doc: &roxmltree::Document<'_>, node: roxmltree::Node<'_, '_>) -> u32 {
    doc.text_pos_at(node.range().start).row
}

/// Outputs become `JOB__NAME`; an input takes the name of a parent's output of that name,
/// and that output's size (a DAX may declare another size where the file is read: the
/// producer's is what is written).
fn name_files_by_job(tasks: &mut [WfTask], index: &HashMap<String, usize>) {
    let qualified = |job: &str, name: &str| format!("{job}__{name}");
    let outputs: Vec<Vec<WfFile>> = tasks.iter().map(|t| t.outputs.clone()).collect();
    for t in tasks.iter_mut() {
        let mut inputs = Vec::with_capacity(t.inputs.len());
        for f in &t.inputs {
            let mut any = false;
            for p in &t.parents {
                let Some(out) = index
                    .get(p)
                    .and_then(|&pi| outputs[pi].iter().find(|o| o.name == f.name))
                else {
                    continue;
                };
                any = true;
                inputs.push(WfFile {
                    name: qualified(p, &f.name),
                    size: out.size.or(f.size),
                });
            }
            if !any {
                inputs.push(f.clone());
            }
        }
        t.inputs = inputs;
        let id = t.id.clone();
        for f in &mut t.outputs {
            f.name = qualified(&id, &f.name);
        }
    }
}
