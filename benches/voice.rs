//! The voice path's own cost: a voice note handed in by a gateway, fetched,
//! uploaded to a transcription server that answers at once, its transcript
//! through the pipeline to a loopback model and the answer delivered —
//! against the same words typed as text, one message at a time in one
//! conversation. The difference of the medians is what the daemon adds to
//! a voice note beyond the transcriber's own time (which a real whisper
//! server spends on the audio: seconds on a small machine). The upload
//! alone (the transcription client against the instant server) is timed too.
//!
//! `cargo bench --bench voice` prints one JSON line. `PP_BENCH_VOICE`
//! (default 300) sets the messages of each kind; `PP_BENCH_VOICE_BYTES`
//! (default 32768, about 10 s of Opus voice) the size of the note.

#[path = "../tests/support/fake_llm.rs"]
mod fake_llm;
#[path = "../tests/support/fake_transcriber.rs"]
mod fake_transcriber;
#[path = "../tests/support/media_gateway.rs"]
mod media_gateway;

use std::time::{Duration, Instant};

use passepartout::Daemon;
use passepartout::config::{Config, ProviderConfig};
use passepartout::model::media::Transcriber;
use passepartout_gateway::{Attachment, MediaKind};

/// What the person says, typed or spoken.
const WORDS: &str = "remind me to water the plants on friday morning before work";

fn env_number(name: &str, default: usize) -> usize {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

fn config(dir: &std::path::Path, llm_url: &str, transcriber_url: &str) -> Config {
    let mut config = Config {
        data_dir: dir.to_path_buf(),
        ..Config::default()
    };
    config.store.backup_every_s = 0;
    config.llm.providers = vec![ProviderConfig {
        name: "loopback".into(),
        base_url: llm_url.to_owned(),
        model: "instant".into(),
        ..ProviderConfig::default()
    }];
    config.transcription.base_url = Some(transcriber_url.to_owned());
    config
}

fn median_ms(mut samples: Vec<Duration>) -> f64 {
    samples.sort();
    samples[samples.len() / 2].as_secs_f64() * 1000.0
}

fn main() {
    let count = env_number("PP_BENCH_VOICE", 300).max(1);
    let note_bytes = env_number("PP_BENCH_VOICE_BYTES", 32 * 1024).max(1);
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    runtime.block_on(async {
        let llm = fake_llm::FakeLlm::start().await;
        llm.set_recording(false);
        let transcriber = fake_transcriber::FakeTranscriber::start().await;
        let dir = tempfile::tempdir().expect("temp dir");
        let config = config(dir.path(), &llm.base_url(), &transcriber.base_url());
        let gateway = media_gateway::MediaGateway::default();
        gateway.put_file("note", vec![0x4f; note_bytes]);
        let daemon = Daemon::start_with(config.clone(), gateway.extensions())
            .await
            .expect("daemon starts");

        let voice = Attachment {
            mime: Some("audio/ogg".into()),
            duration_s: Some(10),
            ..media_gateway::attachment(MediaKind::Voice, "note")
        };
        let heard = || fake_transcriber::Script::Heard {
            text: WORDS.to_owned(),
            avg_logprob: -0.2,
        };
        // Warm both paths (connections, the conversation's worker).
        for _ in 0..5 {
            let id = gateway.send_text("bench", WORDS).await;
            gateway.replies(&id).await;
            transcriber.push(heard());
            let id = gateway.send_media("bench", vec![voice.clone()], None).await;
            gateway.replies(&id).await;
        }
        let mut text = Vec::with_capacity(count);
        let mut spoken = Vec::with_capacity(count);
        for _ in 0..count {
            let started = Instant::now();
            let id = gateway.send_text("bench", WORDS).await;
            gateway.replies(&id).await;
            text.push(started.elapsed());
            transcriber.push(heard());
            let started = Instant::now();
            let id = gateway.send_media("bench", vec![voice.clone()], None).await;
            gateway.replies(&id).await;
            spoken.push(started.elapsed());
        }
        daemon.shutdown().await.expect("clean shutdown");

        let client = Transcriber::new(&config.transcription, None)
            .expect("valid settings")
            .expect("a base URL");
        let mut upload = Vec::with_capacity(count);
        for _ in 0..count {
            transcriber.push(heard());
            let started = Instant::now();
            client
                .transcribe(vec![0x4f; note_bytes], "voice.ogg".into(), "audio/ogg")
                .await
                .expect("transcribed");
            upload.push(started.elapsed());
        }

        let (text, voice, upload) = (median_ms(text), median_ms(spoken), median_ms(upload));
        println!(
            "{}",
            serde_json::json!({
                "bench": "voice",
                "messages_each": count,
                "note_bytes": note_bytes,
                "text_p50_ms": round(text),
                "voice_p50_ms": round(voice),
                "voice_overhead_p50_ms": round(voice - text),
                "transcription_request_p50_ms": round(upload),
            })
        );
    });
}

fn round(ms: f64) -> f64 {
    (ms * 1000.0).round() / 1000.0
}
