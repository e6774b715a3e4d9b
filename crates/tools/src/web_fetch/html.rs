//! A fetched page's HTML as Markdown, within bounds a hostile page cannot move.
//!
//! `htmd` converts recursively (20,000 nested `<div>`s overflowed the stack and aborted
//! saki), and html5ever's tree builder does work that grows with the nesting: every
//! start tag looks down the stack of open elements (600 KB of unclosed `<div>`s took
//! 33 s), and formatting elements left open are cloned again into every new paragraph
//! (14 KB of distinct unclosed `<b>`s made a million elements, 250 MB and 3.4 s). So the
//! page is parsed here, in small pieces, into a tree that counts what it is given:
//! parsing stops once the tree is deeper than [`MAX_DEPTH`] or has more than
//! [`MAX_NODES`] nodes, and the page is then shown as plain text (tags stripped in one
//! pass, no tree, no recursion: [`super::html_text`]). Only a tree within both bounds
//! reaches `htmd`.

use html5ever::tendril::{StrTendril, TendrilSink};
use html5ever::tree_builder::{ElementFlags, NodeOrText, QuirksMode, TreeSink};
use html5ever::{Attribute, ExpandedName, QualName};
use markup5ever_rcdom::{Handle, NodeData, RcDom};
use std::borrow::Cow;
use std::cell::Cell;

/// The deepest tree converted to Markdown. Real pages nest a few dozen levels (framework
/// markup rarely a hundred); at this depth `htmd`'s recursion uses well under a tenth of
/// a 2 MiB thread stack (it overflowed at about 2,500 levels), and the tree builder's
/// per-tag look down the stack stays short.
pub const MAX_DEPTH: usize = 256;

/// The most nodes (elements, comments, text) converted to Markdown: a long
/// documentation page has some tens of thousands; a tree this large takes `htmd` 0.1 to
/// 0.3 s and 40 to 55 MB (release build). The output is cut at the tool output cap anyway.
pub const MAX_NODES: usize = 200_000;

/// The page is fed to the parser in pieces this big, and the bounds checked between
/// them: a piece holds at most 128 tags, so the work done past a bound is small.
const PIECE_BYTES: usize = 256;

/// Tags skipped with what they hold: nothing a reader sees.
const SKIPPED: &[&str] = &[
    "script", "style", "noscript", "iframe", "svg", "form", "head",
];

/// `html` as Markdown, or as plain text with a note when it is past the bounds.
pub fn to_markdown(html: &str) -> String {
    match parse_bounded(html) {
        Some(dom) => htmd::HtmlToMarkdown::builder()
            .skip_tags(SKIPPED.to_vec())
            .build()
            .tree_to_markdown(&dom.document),
        None => format!(
            "[this page's HTML nests more than {MAX_DEPTH} levels deep or has more than \
             {MAX_NODES} nodes, too much to convert to Markdown; its text without markup \
             follows]\n\n{}",
            super::html_text::plain_text(html)
        ),
    }
}

/// The page's tree, or `None` when it goes past a bound.
fn parse_bounded(html: &str) -> Option<RcDom> {
    let opts = html5ever::ParseOpts {
        tree_builder: html5ever::tree_builder::TreeBuilderOpts {
            // As htmd parses: `<noscript>` content is then raw text, and skipped.
            scripting_enabled: true,
            ..Default::default()
        },
        ..Default::default()
    };
    let mut parser = html5ever::parse_document(Bounded::default(), opts);
    let mut rest = html;
    while !rest.is_empty() {
        let mut end = rest.len().min(PIECE_BYTES);
        while !rest.is_char_boundary(end) {
            end += 1;
        }
        let (piece, after) = rest.split_at(end);
        parser.process(StrTendril::from_slice(piece));
        if parser.tokenizer.sink.sink.over.get() {
            return None;
        }
        rest = after;
    }
    let bounded = parser.finish();
    if bounded.over.get() || !within_bounds(&bounded.dom.document) {
        return None;
    }
    Some(bounded.dom)
}

/// Whether the tree, as `htmd` walks it (children, not template contents), is within
/// [`MAX_DEPTH`] and [`MAX_NODES`]; walked with a stack of its own, never recursively.
fn within_bounds(root: &Handle) -> bool {
    let mut nodes = 0usize;
    let mut stack = vec![(root.clone(), 0usize)];
    while let Some((node, depth)) = stack.pop() {
        nodes += 1;
        if depth > MAX_DEPTH || nodes > MAX_NODES {
            return false;
        }
        for child in node.children.borrow().iter() {
            stack.push((child.clone(), depth + 1));
        }
    }
    true
}

/// Whether `node` is more than [`MAX_DEPTH`] levels below the root of its tree; walks
/// at most that many parents.
fn too_deep(node: &Handle) -> bool {
    let mut current = node.clone();
    for _ in 0..=MAX_DEPTH {
        let weak = current.parent.take();
        let parent = weak.as_ref().and_then(std::rc::Weak::upgrade);
        current.parent.set(weak);
        match parent {
            Some(parent) => current = parent,
            None => return false,
        }
    }
    true
}

/// html5ever's `RcDom`, counting the nodes it makes and checking the depth of each one
/// it places. Past a bound it is `over`: it places nothing more (elements it must still
/// make come without attributes), so what is left of the current piece costs little.
#[derive(Default)]
struct Bounded {
    dom: RcDom,
    nodes: Cell<usize>,
    over: Cell<bool>,
}

impl Bounded {
    /// Counts a new node; `false` once past [`MAX_NODES`].
    fn count(&self) -> bool {
        let n = self.nodes.get() + 1;
        self.nodes.set(n);
        if n > MAX_NODES {
            self.over.set(true);
        }
        !self.over.get()
    }

    /// Checks the depth of a node just placed.
    fn placed(&self, node: Option<Handle>) {
        if node.is_some_and(|node| too_deep(&node)) {
            self.over.set(true);
        }
    }
}

/// The node a child is, when it is one (not text).
fn node_of(child: &NodeOrText<Handle>) -> Option<Handle> {
    match child {
        NodeOrText::AppendNode(node) => Some(node.clone()),
        NodeOrText::AppendText(_) => None,
    }
}

impl TreeSink for Bounded {
    type Handle = Handle;
    type Output = Self;
    type ElemName<'a>
        = ExpandedName<'a>
    where
        Self: 'a;

    fn finish(self) -> Self {
        self
    }

    /// Not kept: a hostile page makes one for nearly every tag.
    fn parse_error(&self, _msg: Cow<'static, str>) {}

    fn get_document(&self) -> Handle {
        self.dom.get_document()
    }

    fn elem_name<'a>(&'a self, target: &'a Handle) -> ExpandedName<'a> {
        self.dom.elem_name(target)
    }

    fn create_element(&self, name: QualName, attrs: Vec<Attribute>, flags: ElementFlags) -> Handle {
        if self.count() {
            self.dom.create_element(name, attrs, flags)
        } else {
            self.dom.create_element(name, Vec::new(), flags)
        }
    }

    fn create_comment(&self, text: StrTendril) -> Handle {
        let text = if self.count() {
            text
        } else {
            StrTendril::new()
        };
        self.dom.create_comment(text)
    }

    fn create_pi(&self, target: StrTendril, data: StrTendril) -> Handle {
        if self.count() {
            self.dom.create_pi(target, data)
        } else {
            self.dom.create_pi(StrTendril::new(), StrTendril::new())
        }
    }

    fn append(&self, parent: &Handle, child: NodeOrText<Handle>) {
        if self.over.get() {
            return;
        }
        let joins_text = parent
            .children
            .borrow()
            .last()
            .is_some_and(|last| matches!(last.data, NodeData::Text { .. }));
        // Text after text joins the node before it; other text is a new node.
        if matches!(child, NodeOrText::AppendText(_)) && !joins_text && !self.count() {
            return;
        }
        let node = node_of(&child);
        self.dom.append(parent, child);
        self.placed(node);
    }

    fn append_based_on_parent_node(
        &self,
        element: &Handle,
        prev_element: &Handle,
        child: NodeOrText<Handle>,
    ) {
        if self.over.get() {
            return;
        }
        let node = node_of(&child);
        self.dom
            .append_based_on_parent_node(element, prev_element, child);
        self.placed(node);
    }

    fn append_doctype_to_document(
        &self,
        name: StrTendril,
        public_id: StrTendril,
        system_id: StrTendril,
    ) {
        if self.count() {
            self.dom
                .append_doctype_to_document(name, public_id, system_id);
        }
    }

    fn get_template_contents(&self, target: &Handle) -> Handle {
        self.dom.get_template_contents(target)
    }

    fn same_node(&self, x: &Handle, y: &Handle) -> bool {
        self.dom.same_node(x, y)
    }

    fn set_quirks_mode(&self, mode: QuirksMode) {
        self.dom.set_quirks_mode(mode);
    }

    fn append_before_sibling(&self, sibling: &Handle, child: NodeOrText<Handle>) {
        // Past a bound the sibling may never have been placed (RcDom would panic).
        if self.over.get() {
            return;
        }
        let node = node_of(&child);
        self.dom.append_before_sibling(sibling, child);
        self.placed(node);
    }

    fn add_attrs_if_missing(&self, target: &Handle, attrs: Vec<Attribute>) {
        self.dom.add_attrs_if_missing(target, attrs);
    }

    fn remove_from_parent(&self, target: &Handle) {
        self.dom.remove_from_parent(target);
    }

    fn reparent_children(&self, node: &Handle, new_parent: &Handle) {
        self.dom.reparent_children(node, new_parent);
        // The moved children are one level deeper now: checked through their new parent.
        if too_deep(new_parent) {
            self.over.set(true);
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    /// `open` nested `levels` deep around a word, every element closed.
    fn nested(open: &str, close: &str, levels: usize) -> String {
        format!(
            "<html><body>{}word{}</body></html>",
            open.repeat(levels),
            close.repeat(levels)
        )
    }

    #[test]
    fn trees_at_the_depth_bound_convert_on_a_small_stack() {
        // html and body are two levels, and each repeat below adds one or two.
        let cases = [
            ("<div>", "</div>", 1),
            ("<blockquote>", "</blockquote>", 1),
            ("<ul><li>", "</li></ul>", 2),
            ("<table><tr><td>", "</td></tr></table>", 4),
            ("<b><i>", "</i></b>", 2),
            ("<a href=\"https://x.y/\">", "</a>", 1),
            ("<ol><li><pre><code>", "</code></pre></li></ol>", 4),
        ];
        for (open, close, per) in cases {
            let html = nested(open, close, (MAX_DEPTH - 3) / per);
            // The smallest stack a tokio worker or blocking thread has by default.
            let md = std::thread::Builder::new()
                .stack_size(2 << 20)
                .spawn(move || to_markdown(&html))
                .unwrap()
                .join()
                .unwrap();
            assert!(
                md.contains("word") && !md.contains("without markup"),
                "{open}: {md:.200}"
            );
        }
    }

    #[test]
    fn past_a_bound_the_page_is_its_text() {
        let deep = nested("<div>", "</div>", MAX_DEPTH + 1);
        assert!(to_markdown(&deep).contains("without markup follows]\n\nword"));
        let many = format!("<p>{}</p>", "<span>w</span>".repeat(MAX_NODES));
        let text = to_markdown(&many);
        assert!(text.contains("without markup follows]"), "{text:.200}");
        let within = format!("<p>{}</p>", "<span>w</span> ".repeat(1000));
        assert!(!to_markdown(&within).contains("without markup"));
    }
}
