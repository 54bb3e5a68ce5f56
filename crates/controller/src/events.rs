//! Kubernetes EventRecorder (events.k8s.io/v1) for our resources, without kube-runtime's
//! `Recorder` cache.
//!
//! The Recorder keeps every Event it published, whole, to aggregate repeats into a
//! series, and only sweeps that cache when it publishes again: at 5,000 tables that is
//! 15,000 EventRecorder held after convergence. Its key also leaves the note out, so a second
//! plan's ApplyStarted or PlanCreated within 6 minutes (another plan id in its note) was
//! patched onto the first one as a count, still showing the first note. Here a series
//! is remembered by a hash of what makes two EventRecorder the same one (type, reason, object
//! by uid, note) with just what the patch needs: a few dozen bytes, not a whole Event.

use std::collections::HashMap;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::sync::{Mutex, PoisonError};

use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::api::events::v1::{Event, EventSeries};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use kube::api::{Api, Patch, PatchParams, PostParams};
use kube::runtime::events::EventType;
use kube::{Client, Resource};

/// A repeat within this long of the last one joins its series (as client-go and the
/// Recorder do); later, it is a new Event.
const SERIES_TTL: SignedDuration = SignedDuration::from_mins(6);
/// The longest a note gets: the apiserver refuses more than 1 kB.
const NOTE_CHARS: usize = 1000;

/// Publishes EventRecorder as one controller instance.
pub struct EventRecorder {
    client: Client,
    controller: String,
    instance: String,
    series: Mutex<Series>,
}

/// The live series, by key, and when they were last swept.
#[derive(Default)]
struct Series {
    by_key: HashMap<u64, Last>,
    swept: Option<Timestamp>,
}

/// What a repeat needs to patch the Event it repeats.
struct Last {
    name: String,
    count: i32,
    at: Timestamp,
}

impl EventRecorder {
    pub fn new(client: Client, controller: &str, instance: &str) -> Self {
        EventRecorder {
            client,
            controller: controller.into(),
            instance: instance.into(),
            series: Mutex::new(Series::default()),
        }
    }

    /// Publishes one Event about `obj`: a new Event, or the next count of the series
    /// the same Event started within SERIES_TTL.
    pub async fn publish<K: Resource<DynamicType = ()>>(
        &self,
        obj: &K,
        type_: EventType,
        reason: &str,
        note: &str,
    ) -> Result<(), kube::Error> {
        let regarding = obj.object_ref(&());
        let namespace = regarding
            .namespace
            .clone()
            .unwrap_or_else(|| "default".into());
        let note: String = note.chars().take(NOTE_CHARS).collect();
        let key = series_key(type_, reason, &regarding, &note);
        let now = Timestamp::now();
        let events: Api<Event> = Api::namespaced(self.client.clone(), &namespace);
        let repeat = self.series_lock().repeat(key, now);
        if let Some((name, count)) = repeat {
            let patch = serde_json::json!({
                "series": EventSeries { count, last_observed_time: MicroTime(now) }
            });
            match events
                .patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
                .await
            {
                Ok(_) => return Ok(()),
                // the Event is gone (deleted, or the apiserver's event TTL): start again
                Err(kube::Error::Api(e)) if e.code == 404 => {}
                Err(e) => return Err(e),
            }
        }
        let event = self.new_event(type_, reason, regarding, note, now);
        let name = event.metadata.name.clone().unwrap_or_default();
        events.create(&PostParams::default(), &event).await?;
        self.series_lock().started(key, name, now);
        Ok(())
    }

    fn series_lock(&self) -> std::sync::MutexGuard<'_, Series> {
        self.series.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn new_event(
        &self,
        type_: EventType,
        reason: &str,
        regarding: ObjectReference,
        note: String,
        now: Timestamp,
    ) -> Event {
        Event {
            metadata: ObjectMeta {
                namespace: regarding.namespace.clone(),
                // unique per object and instant, as kubectl and the Recorder name them
                name: Some(format!(
                    "{}.{:x}",
                    regarding.name.as_deref().unwrap_or(&self.controller),
                    now.as_nanosecond()
                )),
                ..ObjectMeta::default()
            },
            action: Some(reason.into()),
            reason: Some(reason.into()),
            note: Some(note),
            event_time: Some(MicroTime(now)),
            regarding: Some(regarding),
            reporting_controller: Some(self.controller.clone()),
            reporting_instance: Some(self.instance.clone()),
            type_: Some(
                match type_ {
                    EventType::Normal => "Normal",
                    EventType::Warning => "Warning",
                }
                .into(),
            ),
            ..Event::default()
        }
    }
}

impl Series {
    /// The Event a repeat at `now` continues, with its next count; `None` for a new one.
    fn repeat(&mut self, key: u64, now: Timestamp) -> Option<(String, i32)> {
        self.sweep(now);
        let last = self.by_key.get_mut(&key)?;
        if last.at + SERIES_TTL <= now {
            return None;
        }
        last.count += 1;
        last.at = now;
        Some((last.name.clone(), last.count))
    }

    fn started(&mut self, key: u64, name: String, now: Timestamp) {
        self.by_key.insert(
            key,
            Last {
                name,
                count: 1,
                at: now,
            },
        );
    }

    /// Forgets the series that ended, at most once a minute (not on every publish: a
    /// sweep visits all of them).
    fn sweep(&mut self, now: Timestamp) {
        if self
            .swept
            .is_some_and(|at| at + SignedDuration::from_mins(1) > now)
        {
            return;
        }
        self.by_key.retain(|_, last| last.at + SERIES_TTL > now);
        self.swept = Some(now);
    }
}

/// Two EventRecorder are the same one when these are: the object by uid, type, reason and note.
fn series_key(type_: EventType, reason: &str, regarding: &ObjectReference, note: &str) -> u64 {
    let mut h = DefaultHasher::new();
    matches!(type_, EventType::Warning).hash(&mut h);
    reason.hash(&mut h);
    regarding.kind.hash(&mut h);
    regarding.namespace.hash(&mut h);
    regarding.name.hash(&mut h);
    regarding.uid.hash(&mut h);
    note.hash(&mut h);
    h.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(seconds: i64) -> Timestamp {
        Timestamp::from_second(1_800_000_000 + seconds).unwrap()
    }

    fn object(uid: &str, resource_version: &str) -> ObjectReference {
        ObjectReference {
            kind: Some("DeltaTable".into()),
            namespace: Some("ns".into()),
            name: Some("orders".into()),
            uid: Some(uid.into()),
            resource_version: Some(resource_version.into()),
            ..ObjectReference::default()
        }
    }

    #[test]
    fn a_repeat_is_the_same_event_and_another_note_another_one() {
        let a = series_key(EventType::Warning, "ApplyFailed", &object("u1", "7"), "x");
        let b = series_key(EventType::Warning, "ApplyFailed", &object("u1", "9"), "x");
        assert_eq!(a, b);
        for other in [
            series_key(EventType::Normal, "ApplyFailed", &object("u1", "7"), "x"),
            series_key(EventType::Warning, "PlanCreated", &object("u1", "7"), "x"),
            series_key(EventType::Warning, "ApplyFailed", &object("u2", "7"), "x"),
            series_key(EventType::Warning, "ApplyFailed", &object("u1", "7"), "y"),
        ] {
            assert_ne!(a, other);
        }
    }

    #[test]
    fn repeats_count_up_until_the_series_goes_quiet() {
        let mut s = Series::default();
        assert_eq!(s.repeat(1, at(0)), None);
        s.started(1, "orders.1".into(), at(0));
        assert_eq!(s.repeat(1, at(10)), Some(("orders.1".into(), 2)));
        assert_eq!(s.repeat(1, at(300)), Some(("orders.1".into(), 3)));
        assert_eq!(s.repeat(2, at(300)), None);
        // six minutes after the last repeat, a new Event
        assert_eq!(s.repeat(1, at(660)), None);
    }

    #[test]
    fn ended_series_are_forgotten() {
        let mut s = Series::default();
        for k in 0..1000 {
            s.started(k, format!("t{k}.1"), at(0));
        }
        s.started(5000, "late.1".into(), at(300));
        assert_eq!(s.repeat(7, at(30)), Some(("t7.1".into(), 2)));
        assert_eq!(s.by_key.len(), 1001);
        // the next sweep, past the TTL of all but two
        assert_eq!(s.repeat(9999, at(380)), None);
        assert_eq!(s.by_key.len(), 2, "t7 (repeated at 30 s) and late remain");
        assert_eq!(s.repeat(9999, at(800)), None);
        assert!(s.by_key.is_empty());
    }
}
