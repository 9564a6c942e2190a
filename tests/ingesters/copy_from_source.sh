#!/usr/bin/env bash
# A correct external ingester for `ledgerdiff verify --ingest-cmd`, used by tests/verify_test.cc.
#
#   copy_from_source.sh FROM TO TARGET_SCHEMA
#
# Copies ledgers FROM..TO (inclusive) from the schema named by $LEDGERDIFF_TEST_SOURCE_SCHEMA into
# TARGET_SCHEMA of the same database, as a parallel ingester would write them:
#   1. clear the range in every per-ledger table of the target (a retried job must not duplicate);
#   2. insert-if-absent the lookup rows the range refers to (history_accounts by address,
#      history_assets by (asset_type, asset_code, asset_issuer)), in sorted key order;
#   3. copy every per-ledger table, mapping surrogate ids through the natural keys; trades keep
#      base_asset_id < counter_asset_id by turning the trade around when the new ids flip.
# All of it in ONE transaction (psql --single-transaction, ON_ERROR_STOP).
# The database comes from the environment the worker sets (PGHOST, PGPORT, PGUSER, PGDATABASE, ...).
set -euo pipefail

if [[ $# -ne 3 ]]; then
  echo "usage: $0 FROM TO TARGET_SCHEMA (source schema in \$LEDGERDIFF_TEST_SOURCE_SCHEMA)" >&2
  exit 2
fi
from=$1
to=$2
target=$3
source=${LEDGERDIFF_TEST_SOURCE_SCHEMA:?set LEDGERDIFF_TEST_SOURCE_SCHEMA to the source schema}
if ! [[ $from =~ ^[0-9]+$ && $to =~ ^[0-9]+$ ]]; then
  echo "$0: FROM and TO must be ledger numbers, got '$from' '$to'" >&2
  exit 2
fi
if ((to < from)); then
  exit 0  # nothing to copy
fi

# :"src" / :"dst" are quoted identifiers, :from / :to plain integers (checked above).
psql -X -q -v ON_ERROR_STOP=1 --single-transaction -f - \
  -v src="$source" -v dst="$target" -v from="$from" -v to="$to" <<'SQL'
-- TOID bounds of the range: ids of ledger L are in [L << 32, (L + 1) << 32).
SELECT (:from::bigint << 32) AS lo, ((:to::bigint + 1) << 32) AS hi \gset

-- 1. Clear the range.
DELETE FROM :"dst".history_ledgers WHERE sequence BETWEEN :from AND :to;
DELETE FROM :"dst".history_transactions WHERE id >= :lo AND id < :hi;
DELETE FROM :"dst".history_operations WHERE id >= :lo AND id < :hi;
DELETE FROM :"dst".history_effects WHERE history_operation_id >= :lo AND history_operation_id < :hi;
DELETE FROM :"dst".history_trades WHERE history_operation_id >= :lo AND history_operation_id < :hi;
DELETE FROM :"dst".history_operation_participants WHERE history_operation_id >= :lo AND history_operation_id < :hi;
DELETE FROM :"dst".history_transaction_participants
  WHERE history_transaction_id >= :lo AND history_transaction_id < :hi;

-- 2. Lookups the range refers to, insert-if-absent in sorted key order.
INSERT INTO :"dst".history_accounts (address)
SELECT a.address FROM :"src".history_accounts a
WHERE a.id IN (
  SELECT history_account_id FROM :"src".history_effects
    WHERE history_operation_id >= :lo AND history_operation_id < :hi
  UNION SELECT base_account_id FROM :"src".history_trades
    WHERE history_operation_id >= :lo AND history_operation_id < :hi
  UNION SELECT counter_account_id FROM :"src".history_trades
    WHERE history_operation_id >= :lo AND history_operation_id < :hi
  UNION SELECT history_account_id FROM :"src".history_operation_participants
    WHERE history_operation_id >= :lo AND history_operation_id < :hi
  UNION SELECT history_account_id FROM :"src".history_transaction_participants
    WHERE history_transaction_id >= :lo AND history_transaction_id < :hi)
ORDER BY a.address COLLATE "C"
ON CONFLICT (address) DO NOTHING;

INSERT INTO :"dst".history_assets (asset_type, asset_code, asset_issuer)
SELECT s.asset_type, s.asset_code, s.asset_issuer FROM :"src".history_assets s
WHERE s.id IN (
  SELECT base_asset_id FROM :"src".history_trades
    WHERE history_operation_id >= :lo AND history_operation_id < :hi
  UNION SELECT counter_asset_id FROM :"src".history_trades
    WHERE history_operation_id >= :lo AND history_operation_id < :hi)
ORDER BY s.asset_code COLLATE "C", s.asset_type COLLATE "C", s.asset_issuer COLLATE "C"
ON CONFLICT (asset_code, asset_type, asset_issuer) DO NOTHING;

-- 3. Per-ledger tables. Tables without surrogate ids copy as they are (same DDL, same columns).
INSERT INTO :"dst".history_ledgers SELECT * FROM :"src".history_ledgers WHERE sequence BETWEEN :from AND :to;
INSERT INTO :"dst".history_transactions SELECT * FROM :"src".history_transactions WHERE id >= :lo AND id < :hi;
INSERT INTO :"dst".history_operations SELECT * FROM :"src".history_operations WHERE id >= :lo AND id < :hi;

INSERT INTO :"dst".history_effects (history_account_id, history_operation_id, "order", type, details, address_muxed)
SELECT da.id, e.history_operation_id, e."order", e.type, e.details, e.address_muxed
FROM :"src".history_effects e
JOIN :"src".history_accounts sa ON sa.id = e.history_account_id
JOIN :"dst".history_accounts da ON da.address = sa.address
WHERE e.history_operation_id >= :lo AND e.history_operation_id < :hi;

INSERT INTO :"dst".history_operation_participants (history_operation_id, history_account_id)
SELECT p.history_operation_id, da.id
FROM :"src".history_operation_participants p
JOIN :"src".history_accounts sa ON sa.id = p.history_account_id
JOIN :"dst".history_accounts da ON da.address = sa.address
WHERE p.history_operation_id >= :lo AND p.history_operation_id < :hi;

INSERT INTO :"dst".history_transaction_participants (history_transaction_id, history_account_id)
SELECT p.history_transaction_id, da.id
FROM :"src".history_transaction_participants p
JOIN :"src".history_accounts sa ON sa.id = p.history_account_id
JOIN :"dst".history_accounts da ON da.address = sa.address
WHERE p.history_transaction_id >= :lo AND p.history_transaction_id < :hi;

-- Trades: new surrogate ids, turned around (every base/counter pair, price_n/price_d,
-- base_is_seller, base_is_exact) when the new asset ids would break base_asset_id < counter_asset_id.
INSERT INTO :"dst".history_trades (
  history_operation_id, "order", ledger_closed_at,
  base_account_id, base_asset_id, base_amount, counter_account_id, counter_asset_id, counter_amount,
  base_is_seller, price_n, price_d, base_offer_id, counter_offer_id,
  base_liquidity_pool_id, counter_liquidity_pool_id, liquidity_pool_fee, trade_type, rounding_slippage, base_is_exact)
SELECT t.history_operation_id, t."order", t.ledger_closed_at,
  CASE WHEN f.flip THEN dca.id ELSE dba.id END,
  CASE WHEN f.flip THEN dcs.id ELSE dbs.id END,
  CASE WHEN f.flip THEN t.counter_amount ELSE t.base_amount END,
  CASE WHEN f.flip THEN dba.id ELSE dca.id END,
  CASE WHEN f.flip THEN dbs.id ELSE dcs.id END,
  CASE WHEN f.flip THEN t.base_amount ELSE t.counter_amount END,
  CASE WHEN f.flip THEN NOT t.base_is_seller ELSE t.base_is_seller END,
  CASE WHEN f.flip THEN t.price_d ELSE t.price_n END,
  CASE WHEN f.flip THEN t.price_n ELSE t.price_d END,
  CASE WHEN f.flip THEN t.counter_offer_id ELSE t.base_offer_id END,
  CASE WHEN f.flip THEN t.base_offer_id ELSE t.counter_offer_id END,
  CASE WHEN f.flip THEN t.counter_liquidity_pool_id ELSE t.base_liquidity_pool_id END,
  CASE WHEN f.flip THEN t.base_liquidity_pool_id ELSE t.counter_liquidity_pool_id END,
  t.liquidity_pool_fee, t.trade_type, t.rounding_slippage,
  CASE WHEN f.flip THEN NOT t.base_is_exact ELSE t.base_is_exact END
FROM :"src".history_trades t
LEFT JOIN :"src".history_accounts sba ON sba.id = t.base_account_id
LEFT JOIN :"dst".history_accounts dba ON dba.address = sba.address
LEFT JOIN :"src".history_accounts sca ON sca.id = t.counter_account_id
LEFT JOIN :"dst".history_accounts dca ON dca.address = sca.address
JOIN :"src".history_assets sbs ON sbs.id = t.base_asset_id
JOIN :"dst".history_assets dbs
  ON (dbs.asset_type, dbs.asset_code, dbs.asset_issuer) = (sbs.asset_type, sbs.asset_code, sbs.asset_issuer)
JOIN :"src".history_assets scs ON scs.id = t.counter_asset_id
JOIN :"dst".history_assets dcs
  ON (dcs.asset_type, dcs.asset_code, dcs.asset_issuer) = (scs.asset_type, scs.asset_code, scs.asset_issuer)
CROSS JOIN LATERAL (SELECT dbs.id > dcs.id AS flip) f
WHERE t.history_operation_id >= :lo AND t.history_operation_id < :hi;
SQL
