//! `runnel user scram set|delete|list`: SCRAM credentials through AlterUserScramCredentials and
//! DescribeUserScramCredentials (KIP-554) with our own codec. As Kafka's admin client does, the salted
//! password is computed here (PBKDF2 with a fresh random salt): the password itself never leaves this process.

use anyhow::bail;
use broker::security::sasl::scram::{random_nonce, ScramMechanism};
use bytes::Bytes;
use clap::Subcommand;
use protocol::messages::alter_user_scram_credentials_request::{
    ScramCredentialDeletion, ScramCredentialUpsertion,
};
use protocol::messages::describe_user_scram_credentials_request::UserName;
use protocol::messages::{AlterUserScramCredentialsRequest, DescribeUserScramCredentialsRequest};
use serde_json::json;

use crate::client::{check, print_json, print_table, protocol_words, ConnArgs};
use crate::wire::{call_api, Wire};

/// `runnel user ...`
#[derive(clap::Args, Debug)]
pub struct UserArgs {
    #[command(flatten)]
    conn: ConnArgs,
    #[command(subcommand)]
    command: UserCommand,
}

#[derive(Subcommand, Debug)]
enum UserCommand {
    /// SCRAM-SHA-256/512 credentials of SASL users.
    #[command(subcommand)]
    Scram(ScramCommand),
}

#[derive(Subcommand, Debug)]
enum ScramCommand {
    /// Create or replace a user's credential for one mechanism.
    Set {
        /// The user name.
        #[arg(long)]
        user: String,
        /// SCRAM-SHA-256 or SCRAM-SHA-512.
        #[arg(long, default_value = "SCRAM-SHA-512")]
        mechanism: String,
        /// The password (or the RUNNEL_SCRAM_PASSWORD environment variable, which keeps it out of `ps`).
        #[arg(long, env = "RUNNEL_SCRAM_PASSWORD", hide_env_values = true)]
        password: String,
        /// PBKDF2 iterations (Kafka accepts 4096..=16384).
        #[arg(long, default_value_t = 8192)]
        iterations: i32,
    },
    /// Delete a user's credential for one mechanism.
    Delete {
        /// The user name.
        #[arg(long)]
        user: String,
        /// SCRAM-SHA-256 or SCRAM-SHA-512.
        #[arg(long, default_value = "SCRAM-SHA-512")]
        mechanism: String,
    },
    /// List users with SCRAM credentials (mechanism and iterations; never the credential).
    List {
        /// Only these users (repeatable).
        #[arg(long)]
        user: Vec<String>,
    },
}

/// Runs a `user` subcommand.
pub fn run(args: UserArgs) -> anyhow::Result<()> {
    let UserCommand::Scram(command) = args.command;
    let conn = &args.conn;
    match command {
        ScramCommand::Set {
            user,
            mechanism,
            password,
            iterations,
        } => {
            let m = mechanism_named(&mechanism)?;
            let salt = random_nonce().into_bytes();
            let salted = m.salted_password(password.as_bytes(), &salt, iterations.max(1) as u32);
            let upsertion = ScramCredentialUpsertion {
                name: user.clone(),
                mechanism: m.code(),
                iterations,
                salt: Bytes::from(salt),
                salted_password: Bytes::from(salted),
                ..Default::default()
            };
            alter(conn, vec![], vec![upsertion], &user, "set")
        }
        ScramCommand::Delete { user, mechanism } => {
            let deletion = ScramCredentialDeletion {
                name: user.clone(),
                mechanism: mechanism_named(&mechanism)?.code(),
                ..Default::default()
            };
            alter(conn, vec![deletion], vec![], &user, "deleted")
        }
        ScramCommand::List { user } => list(conn, user),
    }
}

fn mechanism_named(name: &str) -> anyhow::Result<ScramMechanism> {
    ScramMechanism::from_name(&name.to_ascii_uppercase()).ok_or_else(|| {
        anyhow::anyhow!("unknown mechanism {name:?}: SCRAM-SHA-256 or SCRAM-SHA-512")
    })
}

fn alter(
    conn: &ConnArgs,
    deletions: Vec<ScramCredentialDeletion>,
    upsertions: Vec<ScramCredentialUpsertion>,
    user: &str,
    done: &str,
) -> anyhow::Result<()> {
    let mut wire = Wire::connect_any(conn)?;
    let request = AlterUserScramCredentialsRequest {
        deletions,
        upsertions,
        ..Default::default()
    };
    let resp = call_api!(wire, AlterUserScramCredentials, request, 0);
    for r in &resp.results {
        if r.error_code != 0 {
            bail!(
                "user '{}': {}",
                r.user,
                protocol_words(r.error_code, r.error_message.as_deref())
            );
        }
    }
    if conn.json {
        print_json(&json!({"user": user, "result": done}));
    } else {
        println!("{done} SCRAM credential of user '{user}'");
    }
    Ok(())
}

fn list(conn: &ConnArgs, users: Vec<String>) -> anyhow::Result<()> {
    let mut wire = Wire::connect_any(conn)?;
    let request = DescribeUserScramCredentialsRequest {
        users: (!users.is_empty()).then(|| {
            users
                .into_iter()
                .map(|name| UserName {
                    name,
                    ..Default::default()
                })
                .collect()
        }),
        ..Default::default()
    };
    let resp = call_api!(wire, DescribeUserScramCredentials, request, 0);
    check(
        resp.error_code,
        resp.error_message.as_deref(),
        "listing SCRAM users",
    )?;
    let mut rows = Vec::new();
    for r in &resp.results {
        if r.error_code != 0 {
            rows.push(vec![
                r.user.clone(),
                protocol_words(r.error_code, r.error_message.as_deref()),
                String::new(),
            ]);
            continue;
        }
        for c in &r.credential_infos {
            let name = [ScramMechanism::Sha256, ScramMechanism::Sha512]
                .into_iter()
                .find(|m| m.code() == c.mechanism)
                .map_or("UNKNOWN", ScramMechanism::name);
            rows.push(vec![
                r.user.clone(),
                name.to_string(),
                c.iterations.to_string(),
            ]);
        }
    }
    if conn.json {
        let v: Vec<_> = rows
            .iter()
            .map(|r| json!({"user": r[0], "mechanism": r[1], "iterations": r[2]}))
            .collect();
        print_json(&json!(v));
    } else {
        print_table(&["USER", "MECHANISM", "ITERATIONS"], &rows);
    }
    Ok(())
}
