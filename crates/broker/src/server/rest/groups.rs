//! API v3 consumer groups: list, get one, its consumers, and its lag per partition and summed
//! (`lags`, `lag-summary`), through ListGroups, DescribeGroups, OffsetFetch and ListOffsets. The lag of a
//! partition is its LogEndOffset minus the group's committed offset, and names the member the classic
//! consumer protocol's assignment gives the partition to.

use std::collections::HashMap;

use bytes::Buf;
use protocol::messages::describe_groups_response::DescribedGroup;
use protocol::messages::list_offsets_request::{ListOffsetsPartition, ListOffsetsTopic};
use protocol::messages::offset_fetch_request::OffsetFetchRequestGroup;
use protocol::messages::{
    DescribeGroupsRequest, ListGroupsRequest, ListOffsetsRequest, OffsetFetchRequest,
};
use protocol::{ErrorCode, RequestBody, ResponseBody};
use serde_json::{json, Value};

use super::error::RestError;
use super::v3::unexpected;
use super::{ok, Ctx, RestResult, P};

/// ListOffsets' "latest" timestamp (the LogEndOffset).
const LATEST: i64 = -1;

fn group_json(
    ctx: &Ctx,
    cluster: &str,
    id: &str,
    protocol_type: &str,
    assignor: &str,
    state: &str,
) -> Value {
    let path = format!("/v3/clusters/{cluster}/consumer-groups/{id}");
    json!({
        "kind": "KafkaConsumerGroup",
        "metadata": ctx.meta(&path, Some(format!("crn:///kafka={cluster}/consumer-group={id}"))),
        "cluster_id": cluster,
        "consumer_group_id": id,
        "is_simple": protocol_type.is_empty(),
        "partition_assignor": assignor,
        "state": state.to_ascii_uppercase(),
        "consumers": ctx.related(&format!("{path}/consumers")),
        "lag_summary": ctx.related(&format!("{path}/lag-summary")),
    })
}

/// `GET /v3/clusters/{cluster_id}/consumer-groups`.
pub async fn list(ctx: Ctx, P(cluster_id): P<String>) -> RestResult {
    let cluster = ctx.check_cluster(&cluster_id)?;
    let request = ListGroupsRequest::default();
    let ResponseBody::ListGroups(r) = ctx.call(RequestBody::ListGroups(request)).await? else {
        return Err(unexpected());
    };
    RestError::check(r.error_code, None)?;
    let mut groups = r.groups;
    groups.sort_by(|a, b| a.group_id.cmp(&b.group_id));
    let data = groups.iter().map(|g| {
        group_json(
            &ctx,
            &cluster,
            &g.group_id,
            &g.protocol_type,
            "",
            &g.group_state,
        )
    });
    let path = format!("/v3/clusters/{cluster}/consumer-groups");
    ctx.list("KafkaConsumerGroupList", &path, data.collect())
}

/// DescribeGroups for `id`: 404 for a group that does not exist (Kafka's Dead state or GROUP_ID_NOT_FOUND).
pub(super) async fn describe(ctx: &Ctx, id: &str) -> Result<DescribedGroup, RestError> {
    let request = DescribeGroupsRequest {
        groups: vec![id.to_string()],
        ..Default::default()
    };
    let ResponseBody::DescribeGroups(r) = ctx.call(RequestBody::DescribeGroups(request)).await?
    else {
        return Err(unexpected());
    };
    let g = r.groups.into_iter().next().ok_or_else(unexpected)?;
    if g.error_code == ErrorCode::GROUP_ID_NOT_FOUND.0
        || (g.error_code == 0 && g.group_state == "Dead")
    {
        return Err(RestError::not_found(format!(
            "Consumer group {id} cannot be found."
        )));
    }
    RestError::check(g.error_code, g.error_message.as_deref())?;
    Ok(g)
}

/// `GET .../consumer-groups/{consumer_group_id}`.
pub async fn get_one(ctx: Ctx, P((cluster_id, id)): P<(String, String)>) -> RestResult {
    let cluster = ctx.check_cluster(&cluster_id)?;
    let g = describe(&ctx, &id).await?;
    ok(group_json(
        &ctx,
        &cluster,
        &id,
        &g.protocol_type,
        &g.protocol_data,
        &g.group_state,
    ))
}

/// `GET .../consumer-groups/{consumer_group_id}/consumers`.
pub async fn consumers(ctx: Ctx, P((cluster_id, id)): P<(String, String)>) -> RestResult {
    let cluster = ctx.check_cluster(&cluster_id)?;
    let g = describe(&ctx, &id).await?;
    let path = format!("/v3/clusters/{cluster}/consumer-groups/{id}/consumers");
    let data = g.members.iter().map(|m| {
        json!({
            "kind": "KafkaConsumer",
            "metadata": ctx.meta(&format!("{path}/{}", m.member_id), None),
            "cluster_id": cluster,
            "consumer_group_id": id,
            "consumer_id": m.member_id,
            "instance_id": m.group_instance_id,
            "client_id": m.client_id,
        })
    });
    ctx.list("KafkaConsumerList", &path, data.collect())
}

/// The partitions of a classic consumer protocol assignment (`ConsumerProtocolAssignment`: version,
/// then topics with their partitions); empty when it cannot be read.
fn assigned_partitions(mut b: &[u8]) -> Vec<(String, i32)> {
    let mut out = Vec::new();
    let mut read = || -> Option<()> {
        (b.remaining() >= 6).then_some(())?;
        b.get_i16();
        let topics = b.get_i32();
        for _ in 0..topics.max(0) {
            (b.remaining() >= 2).then_some(())?;
            let len = usize::try_from(b.get_i16()).ok()?;
            (b.remaining() >= len + 4).then_some(())?;
            let name = String::from_utf8_lossy(&b[..len]).into_owned();
            b.advance(len);
            let n = usize::try_from(b.get_i32()).ok()?;
            (b.remaining() >= n * 4).then_some(())?;
            for _ in 0..n {
                out.push((name.clone(), b.get_i32()));
            }
        }
        Some(())
    };
    let _ = read();
    out
}

/// One partition's lag.
struct Lag {
    topic: String,
    partition: i32,
    current: i64,
    end: i64,
    owner: Option<(String, Option<String>, String)>,
}

/// Every partition the group has an offset for, with its LogEndOffset and its owner.
async fn lags(ctx: &Ctx, id: &str) -> Result<Vec<Lag>, RestError> {
    let g = describe(ctx, id).await?;
    let mut owners = HashMap::new();
    for m in &g.members {
        for tp in assigned_partitions(&m.member_assignment) {
            owners.insert(
                tp,
                (
                    m.member_id.clone(),
                    m.group_instance_id.clone(),
                    m.client_id.clone(),
                ),
            );
        }
    }
    let request = OffsetFetchRequest {
        groups: vec![OffsetFetchRequestGroup {
            group_id: id.to_string(),
            member_epoch: -1,
            topics: None,
            ..Default::default()
        }],
        ..Default::default()
    };
    let ResponseBody::OffsetFetch(r) = ctx.call(RequestBody::OffsetFetch(request)).await? else {
        return Err(unexpected());
    };
    let group = r.groups.into_iter().next().ok_or_else(unexpected)?;
    RestError::check(group.error_code, None)?;
    let mut out = Vec::new();
    let mut topics = Vec::new();
    for t in group.topics {
        let mut partitions = Vec::new();
        for p in t
            .partitions
            .iter()
            .filter(|p| p.error_code == 0 && p.committed_offset >= 0)
        {
            partitions.push(ListOffsetsPartition {
                partition_index: p.partition_index,
                current_leader_epoch: -1,
                timestamp: LATEST,
                ..Default::default()
            });
            out.push(Lag {
                topic: t.name.clone(),
                partition: p.partition_index,
                current: p.committed_offset,
                end: -1,
                owner: owners.get(&(t.name.clone(), p.partition_index)).cloned(),
            });
        }
        topics.push(ListOffsetsTopic {
            name: t.name,
            partitions,
            ..Default::default()
        });
    }
    let request = ListOffsetsRequest {
        replica_id: -1,
        topics,
        ..Default::default()
    };
    let ResponseBody::ListOffsets(r) = ctx.call(RequestBody::ListOffsets(request)).await? else {
        return Err(unexpected());
    };
    let mut ends = HashMap::new();
    for t in r.topics {
        for p in t.partitions.into_iter().filter(|p| p.error_code == 0) {
            ends.insert((t.name.clone(), p.partition_index), p.offset);
        }
    }
    for l in &mut out {
        l.end = ends
            .get(&(l.topic.clone(), l.partition))
            .copied()
            .unwrap_or(l.current);
    }
    out.sort_by(|a, b| (&a.topic, a.partition).cmp(&(&b.topic, b.partition)));
    Ok(out)
}

/// `GET .../consumer-groups/{consumer_group_id}/lags`.
pub async fn lags_list(ctx: Ctx, P((cluster_id, id)): P<(String, String)>) -> RestResult {
    let cluster = ctx.check_cluster(&cluster_id)?;
    let all = lags(&ctx, &id).await?;
    let path = format!("/v3/clusters/{cluster}/consumer-groups/{id}/lags");
    let data = all.iter().map(|l| {
        let (consumer, instance, client) = l.owner.clone().unwrap_or_default();
        json!({
            "kind": "KafkaConsumerLag",
            "metadata": ctx.meta(&format!("{path}/{}/partitions/{}", l.topic, l.partition), None),
            "cluster_id": cluster,
            "consumer_group_id": id,
            "topic_name": l.topic,
            "partition_id": l.partition,
            "consumer_id": consumer,
            "instance_id": instance,
            "client_id": client,
            "current_offset": l.current,
            "log_end_offset": l.end,
            "lag": (l.end - l.current).max(0),
        })
    });
    ctx.list("KafkaConsumerLagList", &path, data.collect())
}

/// `GET .../consumer-groups/{consumer_group_id}/lag-summary`: the largest lag, where it is, and the total.
pub async fn lag_summary(ctx: Ctx, P((cluster_id, id)): P<(String, String)>) -> RestResult {
    let cluster = ctx.check_cluster(&cluster_id)?;
    let all = lags(&ctx, &id).await?;
    let lag = |l: &Lag| (l.end - l.current).max(0);
    let total: i64 = all.iter().map(lag).sum();
    let max = all.iter().max_by_key(|l| lag(l));
    let (consumer, instance, client) = max.and_then(|l| l.owner.clone()).unwrap_or_default();
    let path = format!("/v3/clusters/{cluster}/consumer-groups/{id}");
    ok(json!({
        "kind": "KafkaConsumerGroupLagSummary",
        "metadata": ctx.meta(&format!("{path}/lag-summary"), None),
        "cluster_id": cluster,
        "consumer_group_id": id,
        "max_lag_consumer_id": consumer,
        "max_lag_instance_id": instance,
        "max_lag_client_id": client,
        "max_lag_topic_name": max.map_or("", |l| &l.topic),
        "max_lag_partition_id": max.map_or(-1, |l| l.partition),
        "max_lag": max.map_or(0, lag),
        "total_lag": total,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn consumer_assignments_parse() {
        // version 0, one topic "t" with partitions 0 and 2, empty user data.
        let bytes = [
            0, 0, 0, 0, 0, 1, 0, 1, b't', 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 0,
        ];
        assert_eq!(
            assigned_partitions(&bytes),
            vec![("t".into(), 0), ("t".into(), 2)]
        );
        assert!(assigned_partitions(&[0, 0, 0, 0, 0, 9, 0]).is_empty());
        assert!(assigned_partitions(&[]).is_empty());
    }
}
