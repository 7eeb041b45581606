# Behaves as parameters.mode says; used for envelopes, failures and crashes.
import json, sys

req = json.load(sys.stdin)
mode = req["parameters"]["mode"]
if mode == "data":
    print(json.dumps({"success": True, "data": {"count": 2, "items": ["a", "b"]}}))
elif mode == "success_no_data":
    print(json.dumps({"success": True, "count": 3}))
elif mode == "fail":
    print(json.dumps({"success": False, "error": "the data source is down"}))
elif mode == "fail_object":
    print(json.dumps({"success": False, "error": {"code": 7}}))
elif mode == "fail_exit":
    print(json.dumps({"success": False, "error": "bad input"}))
    sys.stderr.write("details on stderr\n")
    sys.exit(1)
elif mode == "exit3":
    sys.stderr.write("first line\nsomething went wrong\n")
    sys.exit(3)
elif mode == "long_stderr":
    sys.stderr.write("HEAD" + "x" * 20000 + "THE END\n")
    sys.exit(2)
elif mode == "invalid":
    print('not json {"a": 1')
elif mode == "truncated":
    print('{"rows": [1, 2')
elif mode == "bad_array":
    print('[1, 2,]')
elif mode == "log_line":
    print("[INFO] 3 rows written")
elif mode == "progress":
    print("[1/3] done")
elif mode == "truncated_array":
    print('[{"row": 1}, {"ro')
elif mode == "json_then_log":
    print('{"rows": 3}')
    print("wrote the report")
elif mode == "log_then_json":
    print("[INFO] start")
    print(json.dumps({"rows": 3}, indent=2))
elif mode == "stderr_ok":
    sys.stderr.write("reading the input\nwrote 3 rows\n")
    print(json.dumps({"rows": 3}))
elif mode == "long_stderr_ok":
    sys.stderr.write("HEAD" + "x" * 5000 + "é" * 3000 + "THE END\n")
    print("ok")
elif mode == "empty":
    pass
elif mode == "number":
    print("42")
elif mode.startswith("nest"):
    n = int(mode[4:])
    print("[" * n + "]" * n)
elif mode == "crash":
    raise RuntimeError("kaboom")
elif mode == "metachar":
    print(json.dumps({"echo": req["input"], "cmd": "$(touch " + req["parameters"]["target"] + ")"}))
elif mode == "metachar_text":
    print("`touch " + req["parameters"]["target"] + "`; $(rm -rf /nonexistent) | && >")
