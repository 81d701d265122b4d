#!/usr/bin/env python3
"""Check crates/protocol/schema/*.schema against the message schemas compiled into Apache Kafka's
kafka-clients jar (the newest Kafka release is the reference).

Usage: check_against_kafka_jar.py KAFKA_CLIENTS_JAR [SCHEMA_DIR]
  e.g. check_against_kafka_jar.py ~/.m2/repository/org/apache/kafka/kafka-clients/4.4.0/kafka-clients-4.4.0.jar

For every message and every version in our range it disassembles (javap) the generated
`<Message>Data.SCHEMA_<v>` static fields and compares, recursively, field names, wire types
(compact or not), nullability and tags with what our schema says; then it compares the defaults
set by the Java no-arg constructors with our `default=` values. Needs a JDK (javap). Exit code 1
on any mismatch. Not part of `cargo test` (needs Java and the jar); run it after editing schemas.
"""
import re, subprocess, sys, os, glob, functools
J=sys.argv[1]
SCHEMA_DIR=sys.argv[2] if len(sys.argv) > 2 else os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "schema")
@functools.lru_cache(None)
def dis(c):
    return subprocess.run(['javap','-c','-constants','-cp',J,'org.apache.kafka.common.message.'+c],capture_output=True,text=True).stdout.split('\n')

@functools.lru_cache(None)
def jschema(c, ver):
    lines=dis(c)
    idx=[i for i,l in enumerate(lines) if re.search(r'putstatic .*// Field SCHEMA_%d:'%ver, l)]
    if not idx: return None
    i=idx[0]; j=i-1
    while j>0 and 'putstatic' not in lines[j]: j-=1
    blk=lines[j+1:i]
    fields=[]; ints=[]; strs=[]; types=[]; tag=None; in_tagged=False
    for l in blk:
        m=re.search(r'\b(iconst_(\d|m1)|bipush\s+(-?\d+)|sipush\s+(-?\d+))\b', l)
        if m:
            v=m.group(2) or m.group(3) or m.group(4); ints.append(-1 if v=='m1' else int(v)); continue
        if 'anewarray' in l and 'java/lang/Object' in l: in_tagged=True
        if 'Integer.valueOf' in l and in_tagged: tag=ints[-1]; continue
        m=re.search(r'// String(?: (.*))?$', l)  # an empty doc string shows as a bare `// String`
        if m: strs.append(m.group(1) or ''); continue
        m=re.search(r'getstatic .*// Field org/apache/kafka/common/protocol/types/Type\.(\w+)', l)
        if m: types.append(m.group(1)); continue
        m=re.search(r'getstatic .*// Field org/apache/kafka/common/message/([\w$]+)\.SCHEMA_(\d+)', l)
        if m: types.append(('S', m.group(1), int(m.group(2)))); continue
        m=re.search(r'getstatic .*// Field SCHEMA_(\d+)', l)
        if m and len(blk)<=2: return jschema(c, int(m.group(1)))
        m=re.search(r'// Method org/apache/kafka/common/protocol/types/(\w+)\.("<init>"|nullable)', l)
        if m:
            k, meth = m.group(1), m.group(2)
            if k in ('ArrayOf','CompactArrayOf'):
                t=types.pop(); types.append(('A', t, meth=='nullable', k.startswith('Compact')))
            elif k=='NullableSchema':  # a nullable struct field
                types.append(('N', types.pop()))
            elif k=='Field':
                name=strs[-2] if len(strs)>=2 else '?'
                t=types.pop()
                fields.append((name, t, tag)); strs=[]; tag=None
            continue
    return fields

def jnorm(t):
    if isinstance(t, tuple):
        if t[0]=='A':
            return ('[]c' if t[3] else '[]') + jnorm(t[1]) + ('?' if t[2] else '')
        if t[0]=='S':
            return '{' + ', '.join(jdump(t[1], t[2])) + '}'
        if t[0]=='N':
            return jnorm(t[1]) + '?'
    m={'INT8':'int8','INT16':'int16','INT32':'int32','INT64':'int64','UINT16':'uint16','FLOAT64':'float64','BOOLEAN':'bool','UUID':'uuid',
       'STRING':'string','NULLABLE_STRING':'string?','COMPACT_STRING':'cstring','COMPACT_NULLABLE_STRING':'cstring?',
       'BYTES':'bytes','NULLABLE_BYTES':'bytes?','COMPACT_BYTES':'cbytes','COMPACT_NULLABLE_BYTES':'cbytes?',
       'RECORDS':'bytes?','COMPACT_RECORDS':'cbytes?','NULLABLE_RECORDS':'bytes?','COMPACT_NULLABLE_RECORDS':'cbytes?'}
    return m.get(t, '??'+str(t))

def jdump(c, v):
    fs=jschema(c, v)
    if fs is None: return ['<no schema %s v%d>'%(c,v)]
    return canon(['%s%s:%s'%(n, '' if tag is None else '@%d'%tag, jnorm(t)) for n,t,tag in fs])

def canon(xs):
    reg=[x for x in xs if '@' not in x.split(':')[0]]
    tg=sorted((x for x in xs if '@' in x.split(':')[0]), key=lambda x:int(x.split(':')[0].split('@')[1]))
    return reg+tg

# ---- ours
def rng(s):
    if s.endswith('+'): return (int(s[:-1]), 10**6)
    if '-' in s: a,b=s.split('-'); return (int(a),int(b))
    return (int(s),int(s))
def parse(path):
    msg=None; structs={}; cur=None
    for raw in open(path):
        line=raw.rstrip('\n')
        t=line.strip()
        if not t or t.startswith('#'): continue
        toks=t.split()
        if not line.startswith(' '):
            if toks[0] in ('request','response'):
                attrs=dict(x.split('=') for x in toks[2:])
                msg=dict(name=toks[1], key=int(attrs['key']), versions=rng(attrs['versions']), flexible=None if attrs['flexible']=='none' else rng(attrs['flexible'])[0])
            cur=toks[1]; structs[cur]=[]
            continue
        f=dict(name=toks[0], ty=toks[1], v=rng(toks[2][1:]), null=None, tag=None)
        for kv in toks[3:]:
            k,val=kv.split('=',1)
            if k=='null': f['null']=rng(val)
            if k=='tag': f['tag']=int(val)
        structs[cur].append(f)
    return msg, structs
def inr(v, r): return r[0]<=v<=r[1]
def odump(msg, structs, st, v):
    flex = msg['flexible'] is not None and v>=msg['flexible']
    out=[]
    for f in structs[st]:
        if not inr(v, f['v']): continue
        tagged = f['tag'] is not None
        if tagged and not flex: continue
        nullable = f['null'] is not None and inr(v, f['null'])
        ty=f['ty']; arr=ty.startswith('[]'); base=ty[2:] if arr else ty
        c = 'c' if flex else ''
        if base in ('string','bytes'): b=c+base+('?' if nullable and not arr else '')
        elif base=='records': b=c+'bytes?'
        elif base in structs: b='{'+', '.join(odump(msg, structs, base, v))+'}'+('?' if nullable and not arr else '')
        else: b=base
        if arr: b='[]'+c+b+('?' if nullable else '')
        out.append('%s%s:%s'%(f['name'], '@%d'%f['tag'] if tagged else '', b))
    return canon(out)

bad=0
for path in sorted(glob.glob(os.path.join(SCHEMA_DIR,'*.schema'))):
    msg, structs = parse(path)
    cls = msg['name'] + 'Data'
    lo, hi = msg['versions']
    for v in range(lo, hi+1):
        a = odump(msg, structs, msg['name'], v)
        b = jdump(cls, v)
        # tagged fields: Kafka lists them after regular fields; compare as sets of tagged + ordered regular
        def split(x): return [y for y in x if '@' not in y.split(':')[0]], sorted(y for y in x if '@' in y.split(':')[0])
        if a != b:
            bad+=1
            print('MISMATCH', msg['name'], 'v%d'%v)
            print('  ours :', a)
            print('  kafka:', b)
# ---- version ranges: ours vs the jar's (Kafka's ApiMessageType: lowest, highest, unstable flag)
amt = subprocess.run(['javap','-c','-p','-cp',J,'org.apache.kafka.common.message.ApiMessageType'],capture_output=True,text=True).stdout.split('\n')
ranges={}; cur=None; stack=[]
for ln in amt:
    m=re.search(r'// String ([A-Z_0-9]+)$', ln)
    if m and cur is None:
        cur=m.group(1); stack=[]; continue
    if cur:
        m2=re.search(r'\b(iconst_(\d|m1)|bipush\s+(-?\d+)|sipush\s+(-?\d+))\b', ln)
        if m2:
            v=m2.group(2) or m2.group(3) or m2.group(4); stack.append(-1 if v=='m1' else int(v))
        if 'Method "<init>"' in ln:
            ranges[cur]=stack[-5:]; cur=None
def upper_snake(n): return re.sub(r'(?<=[a-z0-9])([A-Z])', r'_\1', n).upper()
for path in sorted(glob.glob(os.path.join(SCHEMA_DIR,'*.schema'))):
    msg, _ = parse(path)
    api = upper_snake(re.sub(r'(Request|Response)$', '', msg['name']))
    r = ranges.get(api)
    if r is None:
        print('RANGE', msg['name'], 'not found in ApiMessageType'); bad += 1; continue
    lo, hi, _, _, unstable = r
    stable_hi = hi - 1 if unstable else hi
    ours = msg['versions']
    if msg['name'].endswith('Request') and (ours[0] != lo or ours[1] != stable_hi):
        print('RANGE', msg['name'], 'ours %d-%d, Kafka %d-%d%s' % (ours[0], ours[1], lo, hi, ' (latest unstable)' if unstable else ''))
        bad += 1
print("mismatches:", bad)
schema_bad = bad

# ---- defaults: compare the no-arg constructors of the generated Java classes with ours
def camel(n):
    p=n.split('_'); return p[0]+''.join(x[:1].upper()+x[1:] for x in p[1:])
@functools.lru_cache(None)
def jdefaults(c):
    lines=dis(c)
    full='org.apache.kafka.common.message.'+c
    out={}; start=None
    for i,l in enumerate(lines):
        if re.match(r'\s*public %s\(\);' % re.escape(full), l): start=i; break
    if start is None: return out
    last=None
    for l in lines[start+1:]:
        if re.search(r'\breturn\b', l): break
        m=re.search(r'\b(iconst_(\d|m1)|bipush\s+(-?\d+)|sipush\s+(-?\d+))\b', l)
        if m: v=m.group(2) or m.group(3) or m.group(4); last=str(-1 if v=='m1' else int(v)); continue
        m=re.search(r'// (?:long|int) (-?\d+)l?', l)
        if m: last=m.group(1); continue
        if 'lconst_0' in l: last='0'; continue
        if 'lconst_1' in l: last='1'; continue
        if 'aconst_null' in l: last='null'; continue
        m=re.search(r'// String (.*)$', l)
        if m: last='"%s"'%m.group(1); continue
        if re.search(r'ldc.*// String\s*$', l): last='""'; continue
        m=re.search(r'putfield .*// Field (\w+):(\S+)', l)
        if m:
            out[m.group(1)]=(last, m.group(2)); last=None
    return out
bad=0
for path in sorted(glob.glob(os.path.join(SCHEMA_DIR,'*.schema'))):
    msg, structs = parse(path)
    # re-read defaults
    cur=None; dflt={}
    for raw in open(path):
        t=raw.strip()
        if not t or t.startswith('#'): continue
        toks=t.split()
        if not raw.startswith(' '): cur=toks[1]; continue
        for kv in toks[3:]:
            if kv.startswith('default='): dflt[(cur,toks[0])]=kv[8:]
    for st, fields in structs.items():
        cls = msg['name']+'Data' + ('' if st==msg['name'] else '$'+st)
        jd = jdefaults(cls)
        for f in fields:
            jv = jd.get(camel(f['name']))
            if jv is None: continue
            val, sig = jv
            ours = dflt.get((st, f['name']))
            ty = f['ty']
            if sig in ('I','S','B','J'):
                o = ours if ours is not None else '0'
                o = {'0x7fffffff':'2147483647'}.get(o, o)
                if val is None: continue  # computed (e.g. Long.MAX via ldc2_w) - print to inspect
                if o != val: bad+=1; print('DEFAULT', cls, f['name'], 'ours', o, 'kafka', val)
            elif sig=='Z':
                o = ours if ours is not None else 'false'
                v = {'1':'true','0':'false'}.get(val, val)
                if o != v: bad+=1; print('DEFAULT', cls, f['name'], 'ours', o, 'kafka', v)
            elif sig=='Ljava/lang/String;':
                o = 'null' if ours=='null' else (ours if ours else '""')
                if o != val: bad+=1; print('DEFAULT', cls, f['name'], 'ours', o, 'kafka', val)
print("default mismatches:", bad)
bad += schema_bad
sys.exit(1 if bad else 0)
