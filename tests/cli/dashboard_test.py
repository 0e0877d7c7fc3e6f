"""The training dashboard (ctest dashboard): a data-parallel run serves it on its status port, and
headless Chromium (Debian's chromium) draws the run's own data in it:
  - while the run trains, every chart that has data draws a line whose values are the run's
    (/series), the members table lists the workers, and a screenshot has the curves' colour in
    it (not a blank page);
  - a net name with markup in it shows as text, never as an element;
  - after the run (stopped with SIGTERM), dashboard.html beside the metrics draws the same from
    the data inside it, opened from the file system.
Exits 77 (skipped) without chromium.

    usage: dashboard_test.py BUILD_DIR SOURCE_DIR
"""
import json
import os
import re
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import time
import urllib.request
import zlib

BUILD, SOURCE = (os.path.abspath(p) for p in sys.argv[1:3])
CHROMIUM = shutil.which('chromium') or shutil.which('chromium-browser')
NAME = 'lenet <img src=x onerror=alert(1)> & co'
failures = []


def check(what, ok, detail=''):
    print(('ok   ' if ok else 'FAIL ') + what + ('' if ok else ': ' + str(detail)[:400]))
    if not ok:
        failures.append(what)


def chromium(work, url, *extra):
    profile = tempfile.mkdtemp(dir=work)
    return subprocess.run([CHROMIUM, '--headless=new', '--no-sandbox', '--disable-gpu', '--user-data-dir=' + profile,
                           '--virtual-time-budget=5000', *extra, url], capture_output=True, text=True,
                          timeout=120).stdout


def lines_of(dom):
    """data-key -> the values a chart's polyline draws."""
    return {m.group(1): [float(v) for v in m.group(2).split()]
            for m in re.finditer(r'<polyline class="series" data-key="([a-z_]+)" data-values="([^"]*)"', dom)}


def png_pixels(path):
    """(width, height, rows of RGB(A) bytes) of an 8-bit, non-interlaced PNG (Chromium's screenshots)."""
    data = open(path, 'rb').read()
    pos, idat, width = 8, b'', 0
    while pos < len(data):
        length, kind = struct.unpack('>I4s', data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        if kind == b'IHDR':
            width, height, depth, colour = struct.unpack('>IIBB', body[:10])
            assert depth == 8 and colour in (2, 6), (depth, colour)
            channels = 3 if colour == 2 else 4
        elif kind == b'IDAT':
            idat += body
        pos += 12 + length
    raw, stride, rows, prev = zlib.decompress(idat), width * channels, [], bytearray(width * channels)
    for y in range(height):
        f, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - channels] if i >= channels else 0
            b, c = prev[i], prev[i - channels] if i >= channels else 0
            if f == 1: line[i] = (line[i] + a) & 255
            elif f == 2: line[i] = (line[i] + b) & 255
            elif f == 3: line[i] = (line[i] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append(line)
        prev = line
    return width, height, channels, rows


def main():
    if CHROMIUM is None:
        print('chromium is not installed (apt-get install chromium): skipped')
        return 77
    work = tempfile.mkdtemp(prefix='taihu-dashboard-')
    try:
        with open(os.path.join(SOURCE, 'config', 'nets', 'lenet.ini')) as f:
            net = f.read().replace('name = lenet', 'name = ' + NAME, 1)
        with open(os.path.join(work, 'net.ini'), 'w') as f:
            f.write(net)
        with open(os.path.join(work, 'app.ini'), 'w') as f:
            f.write(f"""net = net.ini
epochs = 1
batch_size = 16
workers = 2
display = 10
[data]
source = synthetic
shape = 1 28 28
classes = 10
train_size = 400000
test_size = 64
[solver]
type = sgd
base_lr = 0.01
[status]
port = 0
port_file = {work}/port
[output]
dir = {work}/out
""")
        run = subprocess.Popen([os.path.join(BUILD, 'apps', 'taihu-train'), '--config-file=' + work + '/app.ini',
                                '--progress=quiet', '--log-level=warn'],
                               env=dict(os.environ, OPENBLAS_NUM_THREADS='1'))
        port_file = os.path.join(work, 'port')
        for _ in range(300):
            if os.path.exists(port_file) and open(port_file).read().strip():
                break
            time.sleep(0.1)
        url = 'http://127.0.0.1:%s/' % open(port_file).read().strip()
        time.sleep(2)  # some iterations to draw
        dom = chromium(work, url, '--dump-dom')
        series = json.load(urllib.request.urlopen(url + 'series'))
        losses = [r['loss'] for r in series['train']]
        drawn = lines_of(dom)
        check('the live page draws loss, learning rate, throughput, allreduce share and density',
              {'loss', 'lr', 'images_per_second', 'allreduce_share', 'density'} <= set(drawn), sorted(drawn))
        check('its loss line is the run\'s losses (from /series), at least 10 of them',
              len(drawn.get('loss', [])) >= 10 and all(any(abs(v - l) <= 1e-9 * max(1, abs(l)) for l in losses)
                                                        for v in drawn['loss']), drawn.get('loss', [])[:5])
        check('the members table lists both workers', 'worker 0 (in-process)' in dom and 'worker 1' in dom)
        check('the net name shows as text, not as an element', '&lt;img src=x' in dom and '<img' not in dom,
              re.findall(r'<h1[^>]*>.*?</h1>', dom))
        shot = os.path.join(work, 'shot.png')
        chromium(work, url, '--screenshot=' + shot, '--window-size=1200,900')
        w, h, channels, rows = png_pixels(shot)
        blue = sum(1 for row in rows for x in range(0, w * channels, channels)
                   if abs(row[x] - 0x2f) < 40 and abs(row[x + 1] - 0x6f) < 40 and abs(row[x + 2] - 0xde) < 40)
        check('the screenshot has the curves in it (their colour on more than 1000 pixels)', blue > 1000, blue)
        run.send_signal(signal.SIGTERM)
        code = run.wait(timeout=60)
        check('the run stops on SIGTERM', code in (0, 130, 143), code)
        saved = os.path.join(work, 'out', 'dashboard.html')
        check('dashboard.html is written beside the metrics', os.path.exists(os.path.join(work, 'out', 'metrics.jsonl'))
              and os.path.exists(saved))
        text = open(saved).read()
        check('its data hide no markup (every < escaped)', '<img' not in text)
        dom = chromium(work, 'file://' + saved, '--dump-dom')
        drawn_saved = lines_of(dom)
        check('opened from the file system it draws the run without a server',
              len(drawn_saved.get('loss', [])) >= len(drawn.get('loss', [])) and 'stopped' in dom,
              (len(drawn_saved.get('loss', [])), re.findall(r'id="state">[^<]*', dom)))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print('dashboard: %d failed' % len(failures))
    return 1 if failures else 0


if __name__ == '__main__':
    sys.exit(main())
