//! The terminal: raw mode, alternate screen, bracketed paste and (where the terminal
//! supports it) disambiguated keys so Shift+Enter is seen; restored on exit and on panic.
//! The loop waits on keys, engine events and the app's next deadline, and draws once per
//! batch of changes.

use crate::app::App;
use crate::protocol::{Action, EngineEvent};
use crossterm::event::{
    DisableBracketedPaste, DisableFocusChange, EnableBracketedPaste, EnableFocusChange, Event,
    EventStream, KeyboardEnhancementFlags, PopKeyboardEnhancementFlags,
    PushKeyboardEnhancementFlags,
};
use crossterm::terminal::{
    disable_raw_mode, enable_raw_mode, supports_keyboard_enhancement, EnterAlternateScreen,
    LeaveAlternateScreen,
};
use crossterm::{cursor, execute};
use futures::StreamExt;
use ratatui::backend::CrosstermBackend;
use ratatui::Terminal;
use std::io::{self, Stdout};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;
use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender};

static KEYBOARD_FLAGS_PUSHED: AtomicBool = AtomicBool::new(false);

type Tui = Terminal<CrosstermBackend<Stdout>>;

/// Runs the UI until the person quits or the engine goes away. The terminal is restored
/// whatever happens.
pub async fn run(
    mut app: App,
    mut events: UnboundedReceiver<EngineEvent>,
    actions: UnboundedSender<Action>,
) -> io::Result<()> {
    let mut terminal = enter()?;
    let result = event_loop(&mut terminal, &mut app, &mut events, &actions).await;
    leave();
    result
}

fn enter() -> io::Result<Tui> {
    install_panic_hook();
    screen()
}

/// Raw mode, the alternate screen and the terminal's reports, on a cleared screen.
fn screen() -> io::Result<Tui> {
    enable_raw_mode()?;
    let mut stdout = io::stdout();
    // Focus reports tell notifications when the person looks elsewhere.
    execute!(
        stdout,
        EnterAlternateScreen,
        EnableBracketedPaste,
        EnableFocusChange
    )?;
    if supports_keyboard_enhancement().unwrap_or(false) {
        execute!(
            stdout,
            PushKeyboardEnhancementFlags(KeyboardEnhancementFlags::DISAMBIGUATE_ESCAPE_CODES)
        )?;
        KEYBOARD_FLAGS_PUSHED.store(true, Ordering::Relaxed);
    }
    let mut terminal = Terminal::new(CrosstermBackend::new(stdout))?;
    terminal.clear()?;
    Ok(terminal)
}

/// Puts the terminal back as it was; safe to call twice, and from a panic.
pub fn leave() {
    let mut stdout = io::stdout();
    if KEYBOARD_FLAGS_PUSHED.swap(false, Ordering::Relaxed) {
        let _ = execute!(stdout, PopKeyboardEnhancementFlags);
    }
    let _ = execute!(
        stdout,
        DisableFocusChange,
        DisableBracketedPaste,
        LeaveAlternateScreen,
        cursor::Show
    );
    let _ = disable_raw_mode();
}

fn install_panic_hook() {
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        leave();
        previous(info);
    }));
}

async fn event_loop(
    terminal: &mut Tui,
    app: &mut App,
    events: &mut UnboundedReceiver<EngineEvent>,
    actions: &UnboundedSender<Action>,
) -> io::Result<()> {
    let mut keys = EventStream::new();
    let mut dirty = true;
    loop {
        for action in app.take_actions() {
            // The engine is gone only when it failed; the loop notices below.
            let _ = actions.send(action);
        }
        if app.quit {
            return Ok(());
        }
        if dirty {
            terminal.draw(|frame| app.draw(frame))?;
            dirty = false;
        }
        let deadline = app.next_deadline(Instant::now());
        let sleep = async {
            match deadline {
                Some(at) => tokio::time::sleep_until(at.into()).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            key = keys.next() => match key {
                Some(Ok(event)) => {
                    let now = Instant::now();
                    match event {
                        Event::Key(key) => app.on_key(key, now),
                        Event::Paste(text) => app.on_paste(&text, now),
                        Event::FocusGained => app.extras.notify.focused = true,
                        Event::FocusLost => app.extras.notify.focused = false,
                        _ => {}
                    }

                    dirty = true;
                }
                Some(Err(e)) => return Err(e),
                None => return Ok(()),
            },
            event = events.recv() => match event {
                Some(event) => {
                    let now = Instant::now();
                    app.apply(event, now);
                    // Coalesce a burst of stream deltas into one frame.
                    while let Ok(event) = events.try_recv() {
                        app.apply(event, now);
                    }
                    notify(app);
                    dirty = true;
                }
                None => return Ok(()),
            },
            () = sleep => {
                dirty |= app.tick(Instant::now());
            }
        }
        if std::mem::take(&mut app.extras.edit_requested) {
            // The key reader stops first (its drop wakes it without reading), so no key
            // meant for the editor is taken; a new one starts after.
            drop(keys);
            *terminal = edit_prompt(app)?;
            keys = EventStream::new();
            dirty = true;
        }
    }
}

/// Writes the notifications that are due (an OSC sequence or the bell; nothing on screen).
fn notify(app: &mut App) {
    use std::io::Write;
    let out = app.extras.notify.take_output();
    if !out.is_empty() {
        let mut stdout = io::stdout();
        let _ = stdout.write_all(out.as_bytes());
        let _ = stdout.flush();
    }
}

/// Ctrl+G: leaves the UI's screen, runs the editor on the prompt, takes its text back and
/// comes back to a new terminal (the old one's screen is gone).
fn edit_prompt(app: &mut App) -> io::Result<Tui> {
    leave();
    let editor = crate::editor::editor_command(&|k| std::env::var(k).ok());
    let result = crate::editor::edit(app.input.text(), &editor);
    let terminal = screen()?;
    match result {
        Ok(text) => app.input.set_text(&text),
        Err(e) => app.transcript.alert(
            crate::protocol::Level::Warn,
            format!("the editor failed; the prompt is unchanged: {e}"),
        ),
    }
    Ok(terminal)
}
