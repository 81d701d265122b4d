//! `runnel topic create|list|describe|delete|alter-config|add-partitions`.
//!
//! Create, delete, add-partitions and the config read go through rdkafka's admin client
//! (CreateTopics, DeleteTopics, CreatePartitions, DescribeConfigs); list/describe use Metadata and
//! ListOffsets; alter-config sends IncrementalAlterConfigs (KIP-339) with our own codec because
//! rust-rdkafka only wraps the legacy, replace-everything AlterConfigs.

use anyhow::{anyhow, bail};
use clap::Subcommand;
use rdkafka::admin::{
    AdminClient, AdminOptions, ConfigSource, NewPartitions, NewTopic, ResourceSpecifier,
    TopicReplication,
};
use rdkafka::client::DefaultClientContext;
use serde_json::json;

use crate::client::{
    block_on, code_words, kafka_error, print_json, print_table, protocol_words, split_kv, ConnArgs,
};

/// `runnel topic ...`
#[derive(clap::Args, Debug)]
pub struct TopicArgs {
    #[command(flatten)]
    conn: ConnArgs,
    #[command(subcommand)]
    command: TopicCommand,
}

#[derive(Subcommand, Debug)]
enum TopicCommand {
    /// Create a topic.
    Create {
        /// Topic name.
        name: String,
        /// Number of partitions (default: the broker's num.partitions).
        #[arg(long, short = 'p')]
        partitions: Option<i32>,
        /// Replication factor (default: the broker's default.replication.factor).
        #[arg(long, short = 'r')]
        replication_factor: Option<i32>,
        /// Topic config, e.g. --config retention.ms=3600000; may be repeated.
        #[arg(long, short = 'c', value_name = "KEY=VALUE")]
        config: Vec<String>,
        /// Succeed without doing anything if the topic already exists.
        #[arg(long)]
        if_not_exists: bool,
    },
    /// List topics with their partition counts.
    List,
    /// Show a topic's partitions (leader, replicas, ISR, log start/end offsets) and configs.
    Describe {
        /// Topic name.
        name: String,
    },
    /// Delete a topic and all its data.
    Delete {
        /// Topic name.
        name: String,
        /// Succeed without doing anything if the topic does not exist.
        #[arg(long)]
        if_exists: bool,
    },
    /// Change a topic's configs (IncrementalAlterConfigs): --set k=v and --delete k.
    AlterConfig {
        /// Topic name.
        name: String,
        /// Set a config, e.g. --set retention.ms=60000; may be repeated.
        #[arg(long, value_name = "KEY=VALUE")]
        set: Vec<String>,
        /// Remove an override so the broker default applies again; may be repeated.
        #[arg(long, value_name = "KEY")]
        delete: Vec<String>,
        /// Only validate the change on the broker (validate_only).
        #[arg(long)]
        dry_run: bool,
    },
    /// Grow a topic to N partitions (partitions can never be removed).
    AddPartitions {
        /// Topic name.
        name: String,
        /// The new total number of partitions.
        #[arg(long, value_name = "N")]
        to: usize,
    },
}

/// Runs a `topic` subcommand.
pub fn run(args: TopicArgs) -> anyhow::Result<()> {
    let conn = &args.conn;
    match args.command {
        TopicCommand::Create {
            name,
            partitions,
            replication_factor,
            config,
            if_not_exists,
        } => create(
            conn,
            &name,
            partitions,
            replication_factor,
            &config,
            if_not_exists,
        ),
        TopicCommand::List => list(conn),
        TopicCommand::Describe { name } => describe(conn, &name),
        TopicCommand::Delete { name, if_exists } => delete(conn, &name, if_exists),
        TopicCommand::AlterConfig {
            name,
            set,
            delete,
            dry_run,
        } => alter_config(conn, &name, &set, &delete, dry_run),
        TopicCommand::AddPartitions { name, to } => add_partitions(conn, &name, to),
    }
}

/// An admin client that never auto-creates topics through its metadata requests.
pub fn admin(conn: &ConnArgs) -> anyhow::Result<AdminClient<DefaultClientContext>> {
    conn.create(&[("allow.auto.create.topics", "false")])
}

fn admin_options(conn: &ConnArgs) -> AdminOptions {
    AdminOptions::new()
        .request_timeout(Some(conn.timeout()))
        .operation_timeout(Some(conn.timeout()))
}

fn create(
    conn: &ConnArgs,
    name: &str,
    partitions: Option<i32>,
    replication_factor: Option<i32>,
    config: &[String],
    if_not_exists: bool,
) -> anyhow::Result<()> {
    let pairs: Vec<(&str, &str)> = config
        .iter()
        .map(|c| split_kv(c, "--config"))
        .collect::<Result<_, _>>()?;
    if let Some(p) = partitions {
        if p < 1 {
            bail!("--partitions must be at least 1, got {p}");
        }
    }
    if let Some(r) = replication_factor {
        if r < 1 {
            bail!("--replication-factor must be at least 1, got {r}");
        }
    }
    let admin = admin(conn)?;
    let mut topic = NewTopic::new(
        name,
        partitions.unwrap_or(-1),
        TopicReplication::Fixed(replication_factor.unwrap_or(-1)),
    );
    for (k, v) in &pairs {
        topic = topic.set(k, v);
    }
    let results = block_on(admin.create_topics([&topic], &admin_options(conn)))?
        .map_err(|e| anyhow!("creating topic '{name}': {}", kafka_error(&e)))?;
    let mut existed = false;
    for r in results {
        if let Err((t, code)) = r {
            if if_not_exists && code == rdkafka::types::RDKafkaErrorCode::TopicAlreadyExists {
                existed = true;
                continue;
            }
            let hint =
                if code == rdkafka::types::RDKafkaErrorCode::InvalidConfig && !pairs.is_empty() {
                    format!(
                        "; configs given: {}",
                        pairs
                            .iter()
                            .map(|(k, v)| format!("{k}={v}"))
                            .collect::<Vec<_>>()
                            .join(", ")
                    )
                } else {
                    String::new()
                };
            bail!("creating topic '{t}': {}{hint}", code_words(code));
        }
    }
    if conn.json {
        print_json(&json!({"topic": name, "created": !existed}));
    } else if existed {
        println!("Topic '{name}' already exists.");
    } else {
        println!("Created topic '{name}'.");
    }
    Ok(())
}

fn list(conn: &ConnArgs) -> anyhow::Result<()> {
    let admin = admin(conn)?;
    let md = admin
        .inner()
        .fetch_metadata(None, conn.timeout())
        .map_err(|e| anyhow!("listing topics: {}", kafka_error(&e)))?;
    let mut topics: Vec<_> = md
        .topics()
        .iter()
        .map(|t| {
            let rf = t
                .partitions()
                .iter()
                .map(|p| p.replicas().len())
                .max()
                .unwrap_or(0);
            (t.name().to_string(), t.partitions().len(), rf)
        })
        .collect();
    topics.sort();
    if conn.json {
        let v: Vec<_> = topics
            .iter()
            .map(|(n, p, rf)| {
                json!({"name": n, "partitions": p, "replication_factor": rf,
                       "internal": n.starts_with("__")})
            })
            .collect();
        print_json(&serde_json::Value::Array(v));
    } else {
        let rows: Vec<Vec<String>> = topics
            .iter()
            .map(|(n, p, rf)| vec![n.clone(), p.to_string(), rf.to_string()])
            .collect();
        print_table(&["TOPIC", "PARTITIONS", "REPLICATION"], &rows);
    }
    Ok(())
}

/// Partition metadata and offsets of one topic, as `topic describe` shows them.
pub struct PartitionInfo {
    pub partition: i32,
    pub leader: i32,
    pub replicas: Vec<i32>,
    pub isr: Vec<i32>,
    pub log_start_offset: i64,
    pub log_end_offset: i64,
}

/// Metadata + watermarks of `name`'s partitions; errors name the topic/partition.
pub fn partitions<C: rdkafka::client::ClientContext>(
    client: &rdkafka::client::Client<C>,
    name: &str,
    timeout: std::time::Duration,
) -> anyhow::Result<Vec<PartitionInfo>> {
    let md = client
        .fetch_metadata(Some(name), timeout)
        .map_err(|e| anyhow!("topic '{name}': {}", kafka_error(&e)))?;
    let topic = md
        .topics()
        .iter()
        .find(|t| t.name() == name)
        .ok_or_else(|| anyhow!("topic '{name}': not in the broker's metadata response"))?;
    if let Some(err) = topic.error() {
        bail!(
            "topic '{name}': {}",
            code_words(rdkafka::types::RDKafkaErrorCode::from(err))
        );
    }
    let mut out = Vec::new();
    for p in topic.partitions() {
        let (lo, hi) = client
            .fetch_watermarks(name, p.id(), timeout)
            .map_err(|e| anyhow!("topic '{name}' partition {}: {}", p.id(), kafka_error(&e)))?;
        out.push(PartitionInfo {
            partition: p.id(),
            leader: p.leader(),
            replicas: p.replicas().to_vec(),
            isr: p.isr().to_vec(),
            log_start_offset: lo,
            log_end_offset: hi,
        });
    }
    out.sort_by_key(|p| p.partition);
    Ok(out)
}

fn join(v: &[i32]) -> String {
    v.iter().map(i32::to_string).collect::<Vec<_>>().join(",")
}

fn describe(conn: &ConnArgs, name: &str) -> anyhow::Result<()> {
    let admin = admin(conn)?;
    let parts = partitions(admin.inner(), name, conn.timeout())?;
    // Configs: only what differs from the defaults. A broker without DescribeConfigs still gets
    // its partitions described.
    let mut configs: Vec<(String, String, String)> = Vec::new();
    let mut config_error = None;
    match block_on(admin.describe_configs([&ResourceSpecifier::Topic(name)], &admin_options(conn)))?
    {
        Ok(results) => {
            for r in results {
                match r {
                    Ok(res) => {
                        for e in res.entries {
                            if !e.is_default && e.source != ConfigSource::Default {
                                let source = format!("{:?}", e.source);
                                configs.push((e.name, e.value.unwrap_or_default(), source));
                            }
                        }
                    }
                    Err(code) => config_error = Some(code_words(code)),
                }
            }
        }
        Err(e) => config_error = Some(kafka_error(&e)),
    }
    configs.sort();
    if conn.json {
        let ps: Vec<_> = parts
            .iter()
            .map(|p| {
                json!({"partition": p.partition, "leader": p.leader, "replicas": p.replicas,
                       "isr": p.isr, "log_start_offset": p.log_start_offset,
                       "log_end_offset": p.log_end_offset})
            })
            .collect();
        let cs: serde_json::Map<String, serde_json::Value> = configs
            .iter()
            .map(|(k, v, _)| (k.clone(), json!(v)))
            .collect();
        let mut v = json!({"name": name, "partitions": ps, "configs": cs});
        if let Some(e) = &config_error {
            v["configs_error"] = json!(e);
        }
        print_json(&v);
    } else {
        println!("Topic: {name}  Partitions: {}", parts.len());
        if !configs.is_empty() {
            let cs: Vec<String> = configs.iter().map(|(k, v, _)| format!("{k}={v}")).collect();
            println!("Configs: {}", cs.join(", "));
        }
        if let Some(e) = &config_error {
            eprintln!("runnel: warning: could not read the configs of topic '{name}': {e}");
        }
        let rows: Vec<Vec<String>> = parts
            .iter()
            .map(|p| {
                vec![
                    p.partition.to_string(),
                    p.leader.to_string(),
                    join(&p.replicas),
                    join(&p.isr),
                    p.log_start_offset.to_string(),
                    p.log_end_offset.to_string(),
                ]
            })
            .collect();
        print_table(
            &[
                "PARTITION",
                "LEADER",
                "REPLICAS",
                "ISR",
                "LOG-START-OFFSET",
                "LOG-END-OFFSET",
            ],
            &rows,
        );
    }
    Ok(())
}

fn delete(conn: &ConnArgs, name: &str, if_exists: bool) -> anyhow::Result<()> {
    let admin = admin(conn)?;
    let results = block_on(admin.delete_topics(&[name], &admin_options(conn)))?
        .map_err(|e| anyhow!("deleting topic '{name}': {}", kafka_error(&e)))?;
    let mut existed = true;
    for r in results {
        if let Err((t, code)) = r {
            if if_exists && code == rdkafka::types::RDKafkaErrorCode::UnknownTopicOrPartition {
                existed = false;
                continue;
            }
            bail!("deleting topic '{t}': {}", code_words(code));
        }
    }
    if conn.json {
        print_json(&json!({"topic": name, "deleted": existed}));
    } else if existed {
        println!("Deleted topic '{name}'.");
    } else {
        println!("Topic '{name}' does not exist.");
    }
    Ok(())
}

fn alter_config(
    conn: &ConnArgs,
    name: &str,
    set: &[String],
    delete: &[String],
    dry_run: bool,
) -> anyhow::Result<()> {
    use protocol::messages::incremental_alter_configs_request::{
        AlterConfigsResource, AlterableConfig,
    };
    use protocol::messages::IncrementalAlterConfigsRequest;
    if set.is_empty() && delete.is_empty() {
        bail!("nothing to change: give --set KEY=VALUE and/or --delete KEY");
    }
    let mut configs = Vec::new();
    for s in set {
        let (k, v) = split_kv(s, "--set")?;
        configs.push(AlterableConfig {
            name: k.to_string(),
            config_operation: 0, // SET
            value: Some(v.to_string()),
            ..Default::default()
        });
    }
    for k in delete {
        configs.push(AlterableConfig {
            name: k.clone(),
            config_operation: 1, // DELETE
            value: None,
            ..Default::default()
        });
    }
    conn.preflight()?;
    let mut wire = crate::wire::Wire::connect_any(conn)?;
    let req = IncrementalAlterConfigsRequest {
        resources: vec![AlterConfigsResource {
            resource_type: 2, // TOPIC
            resource_name: name.to_string(),
            configs,
            ..Default::default()
        }],
        validate_only: dry_run,
        ..Default::default()
    };
    let (_, resp) = wire
        .call(
            protocol::RequestBody::IncrementalAlterConfigs(req),
            i16::MAX,
        )
        .map_err(|e| anyhow!("altering the configs of topic '{name}': {e:#}"))?;
    let protocol::ResponseBody::IncrementalAlterConfigs(resp) = resp else {
        bail!("unexpected response to IncrementalAlterConfigs");
    };
    for r in &resp.responses {
        if r.error_code != 0 {
            bail!(
                "altering the configs of topic '{}': {}",
                r.resource_name,
                protocol_words(r.error_code, r.error_message.as_deref())
            );
        }
    }
    if conn.json {
        print_json(
            &json!({"topic": name, "set": set, "deleted": delete, "validate_only": dry_run}),
        );
    } else if dry_run {
        println!("Config change for topic '{name}' is valid (nothing changed: --dry-run).");
    } else {
        println!("Altered the configs of topic '{name}'.");
    }
    Ok(())
}

fn add_partitions(conn: &ConnArgs, name: &str, to: usize) -> anyhow::Result<()> {
    if to == 0 || to > i32::MAX as usize {
        bail!("--to must be between 1 and {}", i32::MAX);
    }
    let admin = admin(conn)?;
    let np = NewPartitions::new(name, to);
    let results = block_on(admin.create_partitions([&np], &admin_options(conn)))?
        .map_err(|e| anyhow!("adding partitions to topic '{name}': {}", kafka_error(&e)))?;
    for r in results {
        if let Err((t, code)) = r {
            bail!("adding partitions to topic '{t}': {}", code_words(code));
        }
    }
    if conn.json {
        print_json(&json!({"topic": name, "partitions": to}));
    } else {
        println!("Topic '{name}' now has {to} partitions.");
    }
    Ok(())
}
