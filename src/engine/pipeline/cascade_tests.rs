//! The cascade's decisions, under paused time, with scripted models that
//! answer typed results (the HTTP classification into those results is tested
//! against real loopback servers in `llm`).

use super::*;
use crate::model::llm::testing::Scripted;

fn cascade_of(models: &[&Arc<Scripted>]) -> Cascade {
    let models = models.iter().map(|m| (*m).clone() as Arc<dyn ChatModel>).collect();
    Cascade::new(models, Duration::from_secs(30))
}

fn context() -> Context {
    Context {
        system: "sys".into(),
        earlier: (0..4)
            .map(|n| {
                vec![
                    ChatMessage::user(format!("q{n}")),
                    ChatMessage::assistant(format!("a{n}")),
                ]
            })
            .collect(),
        turn: vec![ChatMessage::user("now")],
    }
}

async fn answer(cascade: &Cascade) -> String {
    match cascade.complete(&context(), &Vec::new().into()).await {
        Ok(response) => response.content.unwrap(),
        Err(exhausted) => exhausted.to_string(),
    }
}

fn rate_limited(seconds: u64) -> Result<ChatResponse, LlmError> {
    Err(LlmError::RateLimited {
        retry_after: Some(Duration::from_secs(seconds)),
    })
}

#[tokio::test(start_paused = true)]
async fn a_rate_limited_primary_rests_for_its_retry_after_then_is_used_again() {
    let (primary, secondary) = (
        Scripted::new("primary", vec![rate_limited(20)]),
        Scripted::new("secondary", vec![]),
    );
    let cascade = cascade_of(&[&primary, &secondary]);
    assert_eq!(answer(&cascade).await, "ok from secondary");
    assert_eq!(cascade.health()[0].state, EntryState::CoolingDown);
    assert_eq!(cascade.health()[0].cooldown_s, Some(20));

    tokio::time::advance(Duration::from_secs(19)).await;
    assert_eq!(answer(&cascade).await, "ok from secondary");
    assert_eq!(primary.calls(), 1, "skipped while cooling down");

    tokio::time::advance(Duration::from_secs(1)).await;
    assert_eq!(answer(&cascade).await, "ok from primary");
    assert_eq!(cascade.health()[0].state, EntryState::Ok);
    assert_eq!(cascade.health()[0].tokens_in, 3);
}

#[tokio::test(start_paused = true)]
async fn a_rate_limit_without_retry_after_rests_for_the_default() {
    let primary = Scripted::new("primary", vec![Err(LlmError::RateLimited { retry_after: None })]);
    let secondary = Scripted::new("secondary", vec![]);
    let cascade = cascade_of(&[&primary, &secondary]);
    answer(&cascade).await;
    assert_eq!(cascade.health()[0].cooldown_s, Some(30));
}

#[tokio::test(start_paused = true)]
async fn refused_credentials_make_an_entry_unhealthy_until_a_recheck_succeeds() {
    let primary = Scripted::new("primary", vec![Err(LlmError::Unauthorized { status: 401 })]);
    let secondary = Scripted::new("secondary", vec![]);
    let cascade = cascade_of(&[&primary, &secondary]);
    assert_eq!(answer(&cascade).await, "ok from secondary");
    tokio::time::advance(Duration::from_secs(24 * 3600)).await;
    assert_eq!(answer(&cascade).await, "ok from secondary");
    assert_eq!(primary.calls(), 1, "no time heals refused credentials");
    assert_eq!(cascade.health()[0].state, EntryState::Unhealthy);

    cascade.recheck().await;
    assert_eq!(cascade.health()[0].state, EntryState::Ok);
    assert_eq!(answer(&cascade).await, "ok from primary");
}

#[tokio::test(start_paused = true)]
async fn timeouts_server_errors_and_garbage_fall_through_at_once() {
    for error in [
        LlmError::Timeout,
        LlmError::Server { status: 503 },
        LlmError::Malformed {
            reason: "not JSON".into(),
        },
        LlmError::Unreachable {
            reason: "refused".into(),
        },
    ] {
        let primary = Scripted::new("primary", vec![Err(error.clone())]);
        let secondary = Scripted::new("secondary", vec![]);
        let cascade = cascade_of(&[&primary, &secondary]);
        assert_eq!(answer(&cascade).await, "ok from secondary", "{error:?}");
        // Not resting; but a provider that was not reached is not shown as ok.
        let expected = match error {
            LlmError::Timeout | LlmError::Unreachable { .. } => EntryState::Unreachable,
            _ => EntryState::Ok,
        };
        assert_eq!(cascade.health()[0].state, expected, "{error:?} is no reason to rest");
        assert_eq!(cascade.health()[0].cooldown_s, None, "{error:?} is no reason to rest");
        assert_eq!(answer(&cascade).await, "ok from primary", "{error:?}");
    }
}

#[tokio::test(start_paused = true)]
async fn context_too_long_trims_earlier_turns_once_on_the_same_entry() {
    let primary = Scripted::new("primary", vec![Err(LlmError::ContextTooLong)]);
    let cascade = cascade_of(&[&primary]);
    assert_eq!(answer(&cascade).await, "ok from primary");
    // system + 4 turns × 2 + now = 10; then the newest 2 turns: system + 4 + now = 6.
    let sizes: Vec<_> = primary.seen().iter().map(|r| r.messages.len()).collect();
    assert_eq!(sizes, [10, 6]);

    let stubborn = Scripted::new(
        "stubborn",
        vec![Err(LlmError::ContextTooLong), Err(LlmError::ContextTooLong)],
    );
    let secondary = Scripted::new("secondary", vec![]);
    let cascade = cascade_of(&[&stubborn, &secondary]);
    assert_eq!(
        answer(&cascade).await,
        "ok from secondary",
        "trimmed once, then the next entry"
    );
    assert_eq!(stubborn.calls(), 2);
}

#[tokio::test(start_paused = true)]
async fn when_all_fail_one_sentence_names_each() {
    let primary = Scripted::new("primary", vec![rate_limited(60)]);
    let secondary = Scripted::new("secondary", vec![Err(LlmError::Timeout), Err(LlmError::Timeout)]);
    let cascade = cascade_of(&[&primary, &secondary]);
    let text = answer(&cascade).await;
    assert!(text.starts_with("No language model answered"), "{text}");
    assert!(text.contains("primary at http://model.test/v1: rate limited"), "{text}");
    assert!(
        text.contains("secondary at http://model.test/v1: the provider did not answer in time"),
        "{text}"
    );
    let again = answer(&cascade).await;
    assert!(
        again.contains("primary at http://model.test/v1: rate limited, resting 60 s more"),
        "{again}"
    );
    assert_eq!(text.matches(". ").count(), 1, "one sentence and the fix: {text}");
}

#[tokio::test(start_paused = true)]
async fn a_preferred_entry_is_asked_first_and_the_rest_stay_in_order_behind_it() {
    let (small, big) = (
        Scripted::new("small", vec![]),
        Scripted::new("big", vec![rate_limited(5)]),
    );
    let cascade = cascade_of(&[&small, &big]);
    let ask = |preferred| {
        let cascade = &cascade;
        async move {
            let response = cascade
                .complete_preferring(&context(), &Vec::new().into(), preferred)
                .await;
            response.map(|r| r.content.unwrap()).unwrap_or_else(|e| e.to_string())
        }
    };
    assert_eq!(
        ask(Some("big")).await,
        "ok from small",
        "a rate-limited preference falls back"
    );
    assert_eq!(ask(Some("big")).await, "ok from small", "and rests meanwhile");
    tokio::time::advance(Duration::from_secs(6)).await;
    assert_eq!(ask(Some("big")).await, "ok from big");
    assert_eq!(
        ask(Some("nobody")).await,
        "ok from small",
        "an unknown name changes nothing"
    );
    assert_eq!(ask(None).await, "ok from small");
    assert_eq!((small.calls(), big.calls()), (4, 2));
}

#[tokio::test(start_paused = true)]
async fn a_provider_that_cannot_be_reached_is_not_ok_until_it_answers() {
    let local = Scripted::new(
        "local",
        vec![
            Err(LlmError::Unreachable {
                reason: "connection refused".into(),
            }),
            Err(LlmError::Timeout),
        ],
    );
    let cascade = cascade_of(&[&local]);
    answer(&cascade).await;
    let health = &cascade.health()[0];
    assert_eq!(health.state, EntryState::Unreachable);
    assert!(
        health.last_error.as_deref().unwrap().contains("connection refused"),
        "{health:?}"
    );
    answer(&cascade).await;
    assert_eq!(cascade.health()[0].state, EntryState::Unreachable, "a timeout too");
    assert_eq!(answer(&cascade).await, "ok from local");
    assert_eq!(cascade.health()[0].state, EntryState::Ok);
}

#[tokio::test(start_paused = true)]
async fn a_rate_limit_says_when_it_is_tried_again_not_to_start_the_server() {
    let primary = Scripted::new("primary", vec![rate_limited(45)]);
    let cascade = cascade_of(&[&primary]);
    let text = answer(&cascade).await;
    assert!(!text.contains("Start that server"), "{text}");
    assert!(text.contains("rate limited"), "{text}");
    assert!(text.contains("tried again in 45 s"), "{text}");
    tokio::time::advance(Duration::from_secs(15)).await;
    let again = answer(&cascade).await;
    assert!(again.contains("tried again in 30 s"), "{again}");

    let down = Scripted::new("down", vec![Err(LlmError::Timeout)]);
    let text = answer(&cascade_of(&[&down])).await;
    assert!(text.contains("Start that server"), "{text}");
}

#[tokio::test(start_paused = true)]
async fn an_answer_names_its_entry_and_those_passed_over() {
    let (small, big) = (
        Scripted::new("small", vec![]),
        Scripted::new("big", vec![Err(LlmError::Timeout)]),
    );
    let cascade = cascade_of(&[&small, &big]);
    let answered = cascade
        .answer(&context(), &Vec::new().into(), Some("big"), None)
        .await
        .unwrap();
    assert_eq!(answered.provider, "small");
    assert_eq!(answered.passed_over.len(), 1);
    assert_eq!(answered.passed_over[0].name, "big");
    assert!(matches!(answered.passed_over[0].skip, Skip::Failed(LlmError::Timeout)));
    let answered = cascade
        .answer(&context(), &Vec::new().into(), Some("big"), None)
        .await
        .unwrap();
    assert_eq!(answered.provider, "big");
    assert!(answered.passed_over.is_empty());
    assert_eq!(cascade.names(), ["small", "big"]);
}

#[tokio::test(start_paused = true)]
async fn a_replaced_line_up_is_asked_from_the_next_call_keeping_counts_and_rests() {
    let primary = Scripted::new(
        "primary",
        vec![Err(LlmError::Unauthorized { status: 401 }), rate_limited(60)],
    );
    let secondary = Scripted::new("secondary", vec![]);
    let cascade = cascade_of(&[&primary, &secondary]);
    assert_eq!(answer(&cascade).await, "ok from secondary");
    assert_eq!(cascade.health()[0].state, EntryState::Unhealthy);

    // The same provider (a fixed key, say) and a new one in front of it.
    let third = Scripted::new("third", vec![Err(LlmError::Timeout)]);
    let models = vec![
        third.clone() as Arc<dyn ChatModel>,
        primary.clone() as Arc<dyn ChatModel>,
    ];
    cascade.replace(models, Duration::from_secs(5));
    assert_eq!(cascade.names(), ["third", "primary"]);
    let primary_health = &cascade.health()[1];
    assert_eq!(
        primary_health.state,
        EntryState::Ok,
        "a reload forgets refused credentials"
    );
    assert_eq!(
        (primary_health.calls, primary_health.failures),
        (1, 1),
        "the counts go on"
    );

    // The timeout falls through to primary, whose rate limit then rests it.
    assert!(answer(&cascade).await.contains("rate limited"));
    assert_eq!(cascade.health()[1].state, EntryState::CoolingDown);
    cascade.replace(vec![primary.clone() as Arc<dyn ChatModel>], Duration::from_secs(5));
    assert_eq!(cascade.health()[0].state, EntryState::CoolingDown, "a rest is kept");
    assert_eq!(secondary.calls(), 1, "the entry taken out is asked no more");
}

#[tokio::test(start_paused = true)]
async fn a_chat_is_told_to_ask_the_owner_and_a_terminal_how_to_choose_a_model() {
    let down = Scripted::new("down", vec![Err(LlmError::Timeout), Err(LlmError::Timeout)]);
    let cascade = cascade_of(&[&down]);
    let Err(exhausted) = cascade.complete(&context(), &Vec::new().into()).await else {
        panic!("no model answers")
    };
    let chat = passepartout_gateway::Surface::TEXT;
    let terminal = passepartout_gateway::Surface { terminal: true, ..chat };
    let in_chat = exhausted.told_on(chat);
    assert!(
        in_chat.ends_with("ask whoever runs this assistant to choose another model."),
        "{in_chat}"
    );
    assert!(
        !in_chat.contains("passepartout"),
        "no shell command in a chat: {in_chat}"
    );
    assert_eq!(exhausted.told_on(terminal), exhausted.to_string());
    assert!(exhausted.to_string().contains("`passepartout setup`"), "{exhausted}");
}

#[tokio::test]
async fn an_endpoints_credentials_are_never_shown() {
    let mut config = crate::config::Config::default();
    config.llm.providers[0].base_url = "http://me:canary-pw@127.0.0.1:9/v1?api_key=canary-key".into();
    config.llm.providers[0].timeout_s = 1;
    let cascade = Cascade::new(crate::model::llm::providers(&config).unwrap(), Duration::from_secs(30));
    let health = &cascade.health()[0];
    assert!(!health.endpoint.contains("canary"), "{}", health.endpoint);
    assert!(health.endpoint.contains("127.0.0.1:9/v1"), "{}", health.endpoint);
    let Err(exhausted) = cascade.complete(&context(), &Vec::new().into()).await else {
        panic!("nothing listens on port 9");
    };
    assert!(!exhausted.failures[0].endpoint.contains("canary"), "{exhausted:?}");
}
