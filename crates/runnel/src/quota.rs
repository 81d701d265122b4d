//! `runnel quota set|describe`: client quotas (KIP-546's DescribeClientQuotas and AlterClientQuotas) with
//! our own codec. An entity is a user, a client id, or both; `--default-user`/`--default-client-id` name
//! the default entity of that kind (Kafka's `<default>`), as `kafka-configs.sh --entity-default` does.

use anyhow::bail;
use clap::Subcommand;
use protocol::messages::alter_client_quotas_request::{EntityData, EntryData, OpData};
use protocol::messages::describe_client_quotas_request::ComponentData;
use protocol::messages::{AlterClientQuotasRequest, DescribeClientQuotasRequest};
use serde_json::json;

use crate::client::{check, print_json, print_table, protocol_words, split_kv, ConnArgs};
use crate::wire::{call_api, Wire};

/// `runnel quota ...`
#[derive(clap::Args, Debug)]
pub struct QuotaArgs {
    #[command(flatten)]
    conn: ConnArgs,
    #[command(subcommand)]
    command: QuotaCommand,
}

/// A quota entity: a user and/or a client id, each a name or the default.
#[derive(clap::Args, Debug, Clone)]
struct Entity {
    /// The user (SASL user name or certificate principal name).
    #[arg(long, conflicts_with = "default_user")]
    user: Option<String>,
    /// The default user entity (every user without its own quota).
    #[arg(long)]
    default_user: bool,
    /// The client id.
    #[arg(long, conflicts_with = "default_client_id")]
    client_id: Option<String>,
    /// The default client-id entity.
    #[arg(long)]
    default_client_id: bool,
}

#[derive(Subcommand, Debug)]
enum QuotaCommand {
    /// Set (`--set KEY=VALUE`) and remove (`--remove KEY`) quotas of one entity. Keys: producer_byte_rate,
    /// consumer_byte_rate (bytes/s), request_percentage, controller_mutation_rate.
    Set {
        #[command(flatten)]
        entity: Entity,
        /// A quota to set (repeatable).
        #[arg(long = "set", value_name = "KEY=VALUE")]
        set: Vec<String>,
        /// A quota to remove (repeatable).
        #[arg(long = "remove", value_name = "KEY")]
        remove: Vec<String>,
    },
    /// The quotas of the entities matching: a named user/client id, the defaults, or (none given) all.
    Describe {
        #[command(flatten)]
        entity: Entity,
    },
}

/// Runs a `quota` subcommand.
pub fn run(args: QuotaArgs) -> anyhow::Result<()> {
    match args.command {
        QuotaCommand::Set {
            entity,
            set,
            remove,
        } => alter(&args.conn, &entity, &set, &remove),
        QuotaCommand::Describe { entity } => describe(&args.conn, &entity),
    }
}

impl Entity {
    /// (entity type, name or `None` for the default) of each part given.
    fn parts(&self) -> Vec<(&'static str, Option<String>)> {
        let mut parts = Vec::new();
        if self.user.is_some() || self.default_user {
            parts.push(("user", self.user.clone()));
        }
        if self.client_id.is_some() || self.default_client_id {
            parts.push(("client-id", self.client_id.clone()));
        }
        parts
    }
}

/// Shows an entity as Kafka's tools do: `user=alice, client-id=<default>`.
fn entity_words(parts: &[(String, Option<String>)]) -> String {
    parts
        .iter()
        .map(|(t, n)| format!("{t}={}", n.as_deref().unwrap_or("<default>")))
        .collect::<Vec<_>>()
        .join(", ")
}

fn alter(
    conn: &ConnArgs,
    entity: &Entity,
    set: &[String],
    remove: &[String],
) -> anyhow::Result<()> {
    let parts = entity.parts();
    if parts.is_empty() {
        bail!("name the entity: --user/--default-user and/or --client-id/--default-client-id");
    }
    if set.is_empty() && remove.is_empty() {
        bail!("nothing to change: give --set KEY=VALUE or --remove KEY");
    }
    let mut ops = Vec::new();
    for s in set {
        let (key, value) = split_kv(s, "--set")?;
        let value: f64 = value
            .parse()
            .map_err(|_| anyhow::anyhow!("--set {s}: the value must be a number"))?;
        ops.push(OpData {
            key: key.to_string(),
            value,
            remove: false,
            ..Default::default()
        });
    }
    ops.extend(remove.iter().map(|key| OpData {
        key: key.clone(),
        value: 0.0,
        remove: true,
        ..Default::default()
    }));
    let entry = EntryData {
        entity: parts
            .iter()
            .map(|(t, n)| EntityData {
                entity_type: t.to_string(),
                entity_name: n.clone(),
                ..Default::default()
            })
            .collect(),
        ops,
        ..Default::default()
    };
    let mut wire = Wire::connect_any(conn)?;
    let request = AlterClientQuotasRequest {
        entries: vec![entry],
        validate_only: false,
        ..Default::default()
    };
    let resp = call_api!(wire, AlterClientQuotas, request, 1);
    let owned: Vec<(String, Option<String>)> = parts
        .iter()
        .map(|(t, n)| (t.to_string(), n.clone()))
        .collect();
    let words = entity_words(&owned);
    for e in &resp.entries {
        if e.error_code != 0 {
            bail!(
                "quotas of {words}: {}",
                protocol_words(e.error_code, e.error_message.as_deref())
            );
        }
    }
    if conn.json {
        print_json(&json!({"entity": words, "set": set, "removed": remove}));
    } else {
        println!("updated quotas of {words}");
    }
    Ok(())
}

fn describe(conn: &ConnArgs, entity: &Entity) -> anyhow::Result<()> {
    // match_type 0 = exact name, 1 = the default entity, 2 = any entity of that type.
    let components: Vec<ComponentData> = entity
        .parts()
        .into_iter()
        .map(|(t, n)| ComponentData {
            entity_type: t.to_string(),
            match_type: if n.is_some() { 0 } else { 1 },
            r#match: n,
            ..Default::default()
        })
        .collect();
    let mut wire = Wire::connect_any(conn)?;
    let request = DescribeClientQuotasRequest {
        components,
        strict: false,
        ..Default::default()
    };
    let resp = call_api!(wire, DescribeClientQuotas, request, 1);
    check(
        resp.error_code,
        resp.error_message.as_deref(),
        "describing quotas",
    )?;
    let mut rows = Vec::new();
    for e in resp.entries.iter().flatten() {
        let parts: Vec<(String, Option<String>)> = e
            .entity
            .iter()
            .map(|d| (d.entity_type.clone(), d.entity_name.clone()))
            .collect();
        let words = entity_words(&parts);
        for v in &e.values {
            rows.push((words.clone(), v.key.clone(), v.value));
        }
    }
    if conn.json {
        let v: Vec<_> = rows
            .iter()
            .map(|(e, k, v)| json!({"entity": e, "key": k, "value": v}))
            .collect();
        print_json(&json!(v));
    } else {
        let rows: Vec<Vec<String>> = rows
            .into_iter()
            .map(|(e, k, v)| vec![e, k, v.to_string()])
            .collect();
        print_table(&["ENTITY", "KEY", "VALUE"], &rows);
    }
    Ok(())
}
