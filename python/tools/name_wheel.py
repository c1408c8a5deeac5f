#!/usr/bin/env python3
"""Copies a wheel under another distribution name: ``rmm-rs`` built by maturin becomes
``rmm-rs-cu13`` (or ``-cu12``), the same files with the import name ``rmm``.

The distribution name lives in three places, all rewritten here: the file name, the
``.dist-info`` folder and the ``Name:`` field of its METADATA; RECORD is computed anew (each
file's sha256 and size). Nothing else in the wheel changes.

    python3 name_wheel.py WHEEL NEW_NAME OUT_DIR     # prints the path of the new wheel
"""

import base64
import hashlib
import os
import re
import sys
import zipfile


def normalized(name):
    """The name as it appears in file names (PEP 427/503): runs of -_. become one underscore."""
    return re.sub(r"[-_.]+", "_", name).lower()


def rename(wheel, new_name, out_dir):
    base = os.path.basename(wheel)
    old_prefix, rest = base.split("-", 1)  # rmm_rs, 0.1.0-cp310-abi3-<platform>.whl
    version = rest.split("-", 1)[0]
    old_info = f"{old_prefix}-{version}.dist-info/"
    new_info = f"{normalized(new_name)}-{version}.dist-info/"
    out = os.path.join(out_dir, f"{normalized(new_name)}-{rest}")
    with zipfile.ZipFile(wheel) as src:
        names = src.namelist()
        if old_info + "METADATA" not in names:
            raise SystemExit(f"name_wheel: {wheel} has no {old_info}METADATA")
        entries = []
        for name in names:
            if name == old_info + "RECORD":
                continue
            info, data = src.getinfo(name), src.read(name)
            if name.startswith(old_info):
                name = new_info + name[len(old_info):]
            if name == new_info + "METADATA":
                text, count = re.subn(r"^Name: .*$", f"Name: {new_name}", data.decode(), count=1, flags=re.M)
                if count != 1:
                    raise SystemExit(f"name_wheel: no Name field in {wheel}'s METADATA")
                data = text.encode()
            entries.append((name, data, info))
    record = []
    os.makedirs(out_dir, exist_ok=True)
    with zipfile.ZipFile(out + ".part", "w", zipfile.ZIP_DEFLATED) as dst:
        for name, data, info in entries:
            digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
            record.append(f"{name},sha256={digest},{len(data)}")
            new = zipfile.ZipInfo(name, date_time=info.date_time)
            new.external_attr = info.external_attr
            new.compress_type = zipfile.ZIP_DEFLATED
            dst.writestr(new, data)
        record.append(f"{new_info}RECORD,,")
        dst.writestr(zipfile.ZipInfo(new_info + "RECORD"), "\n".join(record) + "\n", zipfile.ZIP_DEFLATED)
    os.replace(out + ".part", out)
    return out


if __name__ == "__main__":
    if len(sys.argv) != 4:
        raise SystemExit(__doc__)
    print(rename(*sys.argv[1:]))
