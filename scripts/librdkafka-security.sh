# shellcheck shell=bash
# SUITE=security of scripts/librdkafka-tests.sh (sourced by it): librdkafka's tests over TLS and SASL.
#
# The broker (Runnel, or Apache Kafka 4.4.0 with --kafka) gets three listeners on 127.0.0.1:
#   PLAINTEXT  the SCRAM user is created through it (`runnel user scram set`, AlterUserScramCredentials)
#   SSL        ssl.client.auth=required: mutual TLS with a client certificate signed by the test CA
#   SASL_SSL   PLAIN, SCRAM-SHA-256, SCRAM-SHA-512; the broker-wide ssl.client.auth does not apply here
#              (Kafka applies it to SSL listeners only), so SASL clients need no certificate
# with connections.max.reauth.ms=$SEC_REAUTH_MS. Certificates are made for the run with the openssl CLI
# (a CA, the broker's key and certificate for IP 127.0.0.1, a client's encrypted key and certificate in PEM,
# DER and PKCS#12, a second CA for the multi-CA file), and exported in the SSL_* variables librdkafka's
# trivup-based runs set (0097-ssl_verify reads them).
#
# The selection runs once per pass of $SEC_PASSES, each with its own test.conf:
#   sasl_ssl   security.protocol=SASL_SSL, sasl.mechanisms=SCRAM-SHA-512, the client certificate too
#   ssl        security.protocol=SSL with the client certificate
#   plain      security.protocol=SASL_SSL, sasl.mechanisms=PLAIN (not in the default passes)

# Security tests of librdkafka's suite (each also runs its *_local variants):
#   0004 configuration checks incl. ssl.* and sasl.* (local), 0097 certificate verification callbacks,
#   PEM/DER/PKCS#12 keys and CAs in every loading mode, an untrusted client certificate (refused on SSL
#   with client authentication required, accepted on SASL_SSL), 0135 sasl_set_credentials after a failed
#   login (PLAIN/SCRAM).
# Produce, consume, metadata and admin tests of $DEFAULT_TESTS run over each pass too.
# Left out: 0115/0119 (skip themselves when the cluster needs authentication), 0126 (needs an OIDC token
# endpoint), 0124/0128/0133/0134 (local only: no broker involved), 0142-reauthentication (all its cases are
# SUB_TESTs skipped in the runner's quick mode (-Q), so it only reads connections.max.reauth.ms here; without
# -Q its transactional producer cases need transactions, which Runnel does not implement), 0081 (admin incl.
# ACLs: needs an authorizer).
SECURITY_TESTS="0004,0097,0135,0001,0002,0003,0005,0007,0011,0012,0013,0014,0015,0022,0031,0034,0036,0041,0044,0048,0049,0055,0072,0076,0094,0114"
# What scripts/test.sh runs (SECURITY_SUBSET=ci): the above less its six slowest (0011 0014 0015 0034 0041
# 0114, ~90 s a pass; they run over PLAINTEXT in the default suite).
SECURITY_CI_TESTS="0004,0097,0135,0001,0002,0003,0005,0007,0012,0013,0022,0031,0036,0044,0048,0049,0055,0072,0076,0094"
# ssl:0097 is skipped: its untrusted-certificate case expects the broker's refusal as a handshake error
# (ERR__SSL), but under TLS 1.3 Kafka's alert (bad_certificate, 42) arrives after the client's side of the
# handshake is done and librdkafka reports a transport failure: it fails against Kafka 4.4.0 too. The same
# test passes in the sasl_ssl pass against Kafka (the untrusted certificate is not needed there).
# Against Runnel sasl_ssl:0097 is skipped too: in its case "verify_ok=0, untrusted_client_key=1" the client's
# own verify callback rejects the broker's certificate, and librdkafka reports that failure as ERR__SSL only
# when it happens in its handshake loop (rdkafka_ssl.c, "SSL handshake failed: ..."); when it happens in the
# first SSL_connect of the connection it takes the connect path (rdkafka_transport.c, connect_done) and is
# reported as ERR__TRANSPORT, which the test does not accept. Against Runnel (the broker's flight is there
# ~2 ms after the connect) that path was taken in 3 of 3 runs, against Kafka (~33 ms) not in its run. The broker
# only sent a valid certificate; every other case of 0097 passes against Runnel up to that one.
SEC_SKIP="${SEC_SKIP-ssl:0097}"
[[ "${1:-}" == --runnel ]] && SEC_SKIP="${SEC_SKIP},sasl_ssl:0097"
SEC_PASSES="${SEC_PASSES:-sasl_ssl,ssl}"
SEC_REAUTH_MS="${SEC_REAUTH_MS:-10000}"
SEC_USER=testuser
SEC_PASSWORD=testuser-secret
SEC_KEY_PASSWORD=client-key-secret

free_port() {
    python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

wait_port() {
    local p="$1" i
    for i in $(seq 1 150); do   # bounded: 30 s
        python3 -c "import socket; socket.create_connection(('127.0.0.1',$p),0.5)" 2>/dev/null && return 0
        sleep 0.2
    done
    echo "nothing listens on 127.0.0.1:$p after 30 s" >&2
    return 1
}

# make_certs DIR: the CA, broker and client material described above, in DIR.
make_certs() {
    local d="$1" pw="$SEC_KEY_PASSWORD"
    mkdir -p "$d"
    (
        cd "$d"
        local ca
        for ca in ca other-ca; do
            openssl req -x509 -newkey rsa:2048 -nodes -keyout "$ca.key" -out "$ca.pem" -days 2 \
                -subj "/CN=runnel-librdkafka-$ca" -addext 'basicConstraints=critical,CA:TRUE' \
                -addext 'keyUsage=critical,keyCertSign,cRLSign' 2>/dev/null
        done
        openssl x509 -in ca.pem -outform DER -out ca.der
        cat ca.pem other-ca.pem > all-cas.pem
        # broker: unencrypted PKCS#8 key + certificate (IP 127.0.0.1 and localhost), one PEM key store
        openssl req -newkey rsa:2048 -nodes -keyout broker.key -out broker.csr -subj "/CN=localhost" 2>/dev/null
        printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth,clientAuth\n' > broker.ext
        openssl x509 -req -in broker.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 2 \
            -extfile broker.ext -out broker.crt 2>/dev/null
        cat broker.key broker.crt > broker.pem
        # client: encrypted PEM key (ssl.key.password), unencrypted DER key, certificate in PEM and DER,
        # and a PKCS#12 file with key, certificate and CA
        openssl req -newkey rsa:2048 -nodes -keyout client-plain.key -out client.csr -subj "/CN=$SEC_USER" 2>/dev/null
        printf 'extendedKeyUsage=clientAuth\n' > client.ext
        openssl x509 -req -in client.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 2 \
            -extfile client.ext -out client.crt 2>/dev/null
        openssl pkcs8 -topk8 -in client-plain.key -out client.key -v2 aes-256-cbc -passout "pass:$pw"
        openssl pkcs8 -topk8 -nocrypt -in client-plain.key -outform DER -out client-key.der
        openssl x509 -in client.crt -outform DER -out client.der
        openssl pkcs12 -export -inkey client-plain.key -in client.crt -certfile ca.pem -out client.p12 \
            -passout "pass:$pw"
    )
    export SSL_pkcs="$d/client.p12" SSL_password="$pw" SSL_client_auth=required \
        SSL_pub_pem="$d/client.crt" SSL_pub_der="$d/client.der" \
        SSL_priv_pem="$d/client.key" SSL_priv_der="$d/client-key.der" \
        SSL_ca_pem="$d/ca.pem" SSL_ca_der="$d/ca.der" SSL_all_cas_pem="$d/all-cas.pem"
}

# secure_properties DIR: the listeners' security keys (the same for Runnel and Kafka).
secure_properties() {
    local d="$1"
    printf '%s\n' \
        'ssl.keystore.type=PEM' "ssl.keystore.location=$d/broker.pem" \
        'ssl.truststore.type=PEM' "ssl.truststore.location=$d/ca.pem" \
        'ssl.client.auth=required' \
        'sasl.enabled.mechanisms=PLAIN,SCRAM-SHA-256,SCRAM-SHA-512' \
        "listener.name.sasl_ssl.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required user_$SEC_USER=\"$SEC_PASSWORD\";" \
        'listener.name.sasl_ssl.scram-sha-256.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required;' \
        'listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required;' \
        "connections.max.reauth.ms=$SEC_REAUTH_MS"
}

# start_secure_broker TARGET DIR: starts Runnel (--runnel) or Kafka (--kafka) with the three listeners,
# creates the SCRAM user, and sets plain_port, ssl_port, sasl_ssl_port (and started_pid for Runnel).
start_secure_broker() {
    local target="$1" d="$2"
    plain_port="$(free_port)" ssl_port="$(free_port)" sasl_ssl_port="$(free_port)"
    port="$plain_port"
    secure_properties "$d/ssl" > "$d/secure.properties"
    local listeners="PLAINTEXT://127.0.0.1:$plain_port,SSL://127.0.0.1:$ssl_port,SASL_SSL://127.0.0.1:$sasl_ssl_port"
    case "$target" in
        --kafka)
            KAFKA_EXTRA_LISTENERS="SSL://127.0.0.1:$ssl_port,SASL_SSL://127.0.0.1:$sasl_ssl_port" \
                KAFKA_EXTRA_PROPERTIES="$d/secure.properties" \
                bash "$ROOT/scripts/kafka-reference.sh" start "$plain_port" > /dev/null
            ;;
        --runnel)
            {
                echo "listeners=$listeners"
                echo "log.dirs=$d/data"
                echo 'num.partitions=4'
                echo 'auto.create.topics.enable=true'
                echo 'metrics.listeners=http://127.0.0.1:0'
            } >> "$d/secure.properties"
            "$ROOT/target/release/runnel" server --config "$d/secure.properties" > "$d/runnel.log" 2>&1 &
            started_pid=$!
            ;;
        *) echo "SUITE=security starts its own broker: use --runnel or --kafka" >&2; exit 2 ;;
    esac
    wait_port "$plain_port" && wait_port "$ssl_port" && wait_port "$sasl_ssl_port" \
        || { [[ -f "$d/runnel.log" ]] && tail -20 "$d/runnel.log" >&2; exit 1; }
    # The SCRAM-SHA-512 user: with Kafka's kafka-configs against Kafka, with the runnel CLI against Runnel.
    if [[ "$target" == --kafka ]]; then
        java -cp "$(bash "$ROOT/scripts/kafka-reference.sh" classpath)" org.apache.kafka.tools.ConfigCommand \
            --bootstrap-server "127.0.0.1:$plain_port" --alter --entity-type users --entity-name "$SEC_USER" \
            --add-config "SCRAM-SHA-512=[password=$SEC_PASSWORD]" \
            > "$d/kafka-configs.log" 2>&1 || { cat "$d/kafka-configs.log" >&2; exit 1; }
    else
        RUNNEL_SCRAM_PASSWORD="$SEC_PASSWORD" "$ROOT/target/release/runnel" user scram set \
            --user "$SEC_USER" --mechanism SCRAM-SHA-512 -b "127.0.0.1:$plain_port" > /dev/null
    fi
}

# write_pass_conf PASS DIR FILE: librdkafka's test.conf for one pass.
write_pass_conf() {
    local pass="$1" d="$2" f="$3"
    {
        echo 'test.timeout.multiplier=2'
        echo 'test.topic.random=true'
        echo "ssl.ca.location=$d/ca.pem"
        echo "ssl.certificate.location=$d/client.crt"
        echo "ssl.key.location=$d/client.key"
        echo "ssl.key.password=$SEC_KEY_PASSWORD"
        case "$pass" in
            ssl)
                echo "metadata.broker.list=127.0.0.1:$ssl_port"
                echo 'security.protocol=SSL'
                ;;
            sasl_ssl | plain)
                echo "metadata.broker.list=127.0.0.1:$sasl_ssl_port"
                echo 'security.protocol=SASL_SSL'
                if [[ "$pass" == plain ]]; then echo 'sasl.mechanisms=PLAIN'; else echo 'sasl.mechanisms=SCRAM-SHA-512'; fi
                echo "sasl.username=$SEC_USER"
                echo "sasl.password=$SEC_PASSWORD"
                ;;
            *) echo "unknown pass $pass (sasl_ssl, ssl, plain)" >&2; exit 2 ;;
        esac
    } > "$f"
}
