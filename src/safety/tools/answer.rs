//! What a tool answers: text for the model, and the images the answer held
//! (a tool server's screenshot or chart). A model that can see images gets
//! them as image parts beside the text, in the turn that called the tool;
//! anywhere only text fits (a call run after its approval, a model without
//! vision, a later turn), each image is a note in the text instead.

use crate::model::llm::Image;

/// The most images one answer shows the model; the rest become notes.
pub const MAX_IMAGES: usize = 4;

/// The largest image shown to a model, in bytes (the providers' own limit
/// for one image is about this); a larger one becomes a note.
pub const MAX_IMAGE_BYTES: usize = 5 * 1024 * 1024;

/// The image types every vision provider takes.
const SHOWN_TYPES: [&str; 4] = ["image/png", "image/jpeg", "image/gif", "image/webp"];

/// A tool's answer.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ToolAnswer {
    /// What the model reads.
    pub text: String,
    /// Images to show a model that can see them, each with its bytes.
    pub images: Vec<Image>,
}

impl From<String> for ToolAnswer {
    fn from(text: String) -> Self {
        Self {
            text,
            images: Vec::new(),
        }
    }
}

impl ToolAnswer {
    /// Adds an image `tool` returned: kept to be shown when it is of a type
    /// the providers take, small enough, and within the count; else noted
    /// in the text, saying why.
    pub fn add_image(&mut self, tool: &str, mime: &str, bytes: Vec<u8>) {
        let left_out = if !SHOWN_TYPES.contains(&mime) {
            Some("a type models are not shown")
        } else if bytes.len() > MAX_IMAGE_BYTES {
            Some("too large to show")
        } else if self.images.len() >= MAX_IMAGES {
            Some("one image too many to show")
        } else {
            None
        };
        match left_out {
            Some(why) => self.add_line(&format!("[an image ({mime}, {} bytes): {why}]", bytes.len())),
            None => self.images.push(Image::from_tool(tool, mime, bytes)),
        }
    }

    /// The answer as text alone, each image a note where it was.
    pub fn into_text(self) -> String {
        let mut answer = Self {
            text: self.text,
            images: Vec::new(),
        };
        for image in &self.images {
            let size = image.bytes.as_ref().map_or(0, |bytes| bytes.len());
            answer.add_line(&format!("[an image ({}, {size} bytes) not shown here]", image.mime));
        }
        answer.text
    }

    /// Adds `line` to the text, on a line of its own.
    pub fn add_line(&mut self, line: &str) {
        if !self.text.is_empty() {
            self.text.push('\n');
        }
        self.text.push_str(line);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn images_beyond_the_type_size_or_count_are_notes() {
        let mut answer = ToolAnswer::from("chart:".to_owned());
        answer.add_image("plot", "image/svg+xml", vec![0; 10]);
        answer.add_image("plot", "image/png", vec![0; MAX_IMAGE_BYTES + 1]);
        for _ in 0..=MAX_IMAGES {
            answer.add_image("plot", "image/png", vec![1, 2, 3]);
        }
        assert_eq!(answer.images.len(), MAX_IMAGES);
        let lines: Vec<&str> = answer.text.lines().collect();
        assert_eq!(lines[0], "chart:");
        assert_eq!(
            lines[1],
            "[an image (image/svg+xml, 10 bytes): a type models are not shown]"
        );
        assert!(lines[2].ends_with("too large to show]"), "{lines:?}");
        assert_eq!(lines[3], "[an image (image/png, 3 bytes): one image too many to show]");
        assert_eq!(answer.images[0].tool.as_deref(), Some("plot"));
    }

    #[test]
    fn as_text_each_image_is_a_note() {
        let mut answer = ToolAnswer::default();
        answer.add_image("shot", "image/png", vec![1]);
        assert_eq!(answer.into_text(), "[an image (image/png, 1 bytes) not shown here]");
    }
}
