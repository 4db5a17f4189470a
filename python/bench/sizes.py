"""The benchmarks' size arguments: "64MiB", "4KiB", "1GiB" (binary units) or a plain byte count."""


def parse_size(text):
    units = {"KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30}
    for u, m in units.items():
        if text.endswith(u):
            return int(float(text[: -len(u)]) * m)
    return int(text)
