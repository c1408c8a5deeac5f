"""Tests of module_cycles.py on small made-up crates: each rule fires where it must, and only there."""
import os
import subprocess
import sys
import tempfile
import unittest

TOOL = os.path.join(os.path.dirname(os.path.abspath(__file__)), "module_cycles.py")


def run(files):
    with tempfile.TemporaryDirectory() as src:
        for name, text in files.items():
            path = os.path.join(src, name)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w", encoding="utf-8") as f:
                f.write(text)
        p = subprocess.run([sys.executable, TOOL, src], capture_output=True, text=True)
        return p.returncode, p.stdout


class ModuleCycles(unittest.TestCase):
    def test_siblings_that_import_each_other_are_a_circle(self):
        rc, out = run({"lib.rs": "mod a; mod b;", "a.rs": "use crate::b::B;", "b.rs": "use crate::a::A;"})
        self.assertEqual(rc, 1)
        self.assertIn("circle among the children of crate: a <-> b", out)

    def test_a_circle_round_three_modules_and_through_super(self):
        rc, out = run({
            "x/mod.rs": "mod a; mod b; mod c;",
            "x/a.rs": "use super::b::f;",
            "x/b.rs": "fn g() { super::c::h() }",
            "x/c.rs": "use super::{a::A, d};",
        })
        self.assertEqual(rc, 1)
        self.assertIn("circle among the children of x: a <-> b <-> c", out)

    def test_parents_and_children_and_one_way_imports_are_no_circle(self):
        rc, out = run({
            "lib.rs": "mod a; mod b; use crate::a::inner::X;",
            "a/mod.rs": "mod inner; use self::inner::X; use crate::b::B;",
            "a/inner.rs": "use super::Y; use crate::a::Z;",
            "b.rs": "// use crate::a::A; (a comment)\nconst S: &str = \"crate::a::A\";",
        })
        self.assertEqual(rc, 0, out)
        self.assertIn("no circle", out)

    def test_the_driver_may_use_only_modules_that_use_nothing(self):
        base = {"lib.rs": "mod driver; mod error; mod stream;", "error.rs": "pub struct Error;",
                "stream.rs": "use crate::driver::call;"}
        rc, out = run({**base, "driver/mod.rs": "use crate::error::Error;"})
        self.assertEqual(rc, 0, out)
        rc, out = run({**base, "driver/mod.rs": "use crate::stream::Stream;"})
        self.assertEqual(rc, 1)
        self.assertIn("driver/mod.rs imports crate::stream::Stream, above the driver door", out)


if __name__ == "__main__":
    unittest.main()
