"""Tests of safety_comments.py on small made-up sources: a block passes where its comment stands
where clippy's `undocumented_unsafe_blocks` looks for it, and fails everywhere else."""
import os
import subprocess
import sys
import tempfile
import unittest

TOOL = os.path.join(os.path.dirname(os.path.abspath(__file__)), "safety_comments.py")


def run(text):
    with tempfile.TemporaryDirectory() as src:
        with open(os.path.join(src, "t.rs"), "w", encoding="utf-8") as f:
            f.write(text)
        p = subprocess.run([sys.executable, TOOL, src], capture_output=True, text=True)
        return p.returncode, p.stdout


class SafetyComments(unittest.TestCase):
    def assert_documented(self, text, blocks=1):
        rc, out = run(text)
        self.assertEqual(rc, 0, out)
        self.assertIn(f"all {blocks} unsafe blocks documented", out)

    def assert_undocumented(self, text, line):
        rc, out = run(text)
        self.assertEqual(rc, 1, out)
        self.assertIn(f"t.rs:{line}: unsafe block without a // SAFETY: comment", out)

    def test_a_comment_directly_above_or_above_its_attributes(self):
        self.assert_documented("fn f() {\n    // SAFETY: p is live.\n    unsafe { g(p) };\n}\n")
        self.assert_documented("// SAFETY: the first line\n// and a second.\n\n#[allow(x)]\nunsafe {\n}\n")
        self.assert_documented("/* SAFETY: a block comment\n   over two lines. */\nlet x = unsafe { g() };\n")

    def test_a_comment_above_the_statement_that_holds_the_block(self):
        self.assert_documented("// SAFETY: p is live.\nassert_eq!(unsafe { g(p) }, 0);\n")
        self.assert_documented("// SAFETY: p is live.\nlet x =\n    unsafe { g(p) };\n")
        self.assert_documented("// SAFETY: p is live.\nx.y =\n    unsafe { g(p) };\n")

    def test_a_block_on_a_line_of_its_own_inside_a_call_needs_the_comment_there(self):
        self.assert_undocumented("// SAFETY: p is live.\ncheck(\n    unsafe { g(p) },\n    0,\n)?;\n", 3)
        self.assert_undocumented("// SAFETY: p is live.\nlet v = a\n    .b()\n    .c(unsafe { g(p) });\n", 4)
        self.assert_undocumented("// SAFETY: p is live.\nlet ok = a ==\n    unsafe { g(p) };\n", 3)
        self.assert_documented("check(\n    // SAFETY: p is live.\n    unsafe { g(p) },\n    0,\n)?;\n")

    def test_each_statement_needs_its_own(self):
        self.assert_undocumented("// SAFETY: p is live.\nunsafe { g(p) };\nunsafe { h(p) };\n", 3)
        self.assert_undocumented("fn f() {\n    unsafe { g() }\n}\n", 2)
        self.assert_undocumented("// A comment that says something else.\nunsafe { g() };\n", 2)
        self.assert_undocumented("if x {\n    // SAFETY: p is live.\n    a();\n    unsafe { g() };\n}\n", 4)
        self.assert_undocumented("// SAFETY: p is live.\nf();\n\nassert!(unsafe { g() });\n", 4)

    def test_two_blocks_on_one_line_share_its_comment_and_are_both_counted(self):
        self.assert_documented("// SAFETY: both live.\nassert_eq!(unsafe { a() }, unsafe { b() });\n", 2)

    def test_unsafe_in_comments_strings_and_items_is_no_block(self):
        self.assert_documented(
            '/// unsafe { doc() }\n// unsafe { note() }\nlet s = "unsafe { s }";\nlet r = r#"unsafe {"#;\n'
            "unsafe fn f() {}\nunsafe impl Send for X {}\nunsafe extern \"C\" {\n}\n",
            blocks=0,
        )

    def test_a_brace_on_the_next_line(self):
        self.assert_undocumented("let x = unsafe\n{\n    g()\n};\n", 1)
        self.assert_documented("// SAFETY: ok.\nlet x = unsafe\n{\n    g()\n};\n")


if __name__ == "__main__":
    unittest.main()
