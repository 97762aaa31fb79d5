// Driven by tests/compat/jdbc.rs: the PostgreSQL JDBC driver (pgjdbc) against a server on the
// given port. Autocommit DDL, a rewritten batch INSERT (reWriteBatchedInserts) with int, varchar,
// numeric (binary) and timestamp (text, OID 0) parameters, server-side prepared statements after
// the 5th use, SERIALIZABLE transactions and an exact UPDATE count; getGeneratedKeys of serial
// and identity columns, and how DatabaseMetaData describes them; a timestamptz bound from an
// OffsetDateTime, an interval, and timestamptz + interval read back; a server-side prepared
// SELECT * whose result columns an ALTER TABLE changed, which pgjdbc prepares afresh on the
// server's "cached plan must not change result type"; Connection.setSavepoint / rollback(sp),
// and autosave=always, which wraps each statement of a transaction in a savepoint so that an
// error (a duplicate key) does not end the transaction. Prints lines the test checks.
import java.sql.*;
import java.math.BigDecimal;
public class JdbcSmoke {
  public static void main(String[] a) throws Exception {
    String url = "jdbc:postgresql://127.0.0.1:" + a[0] + "/postgres?user=postgres&sslmode=disable&reWriteBatchedInserts=true";
    try (Connection c = DriverManager.getConnection(url)) {
      try (Statement s = c.createStatement()) {
        s.execute("CREATE TABLE j (id int PRIMARY KEY, name varchar(20), amt numeric(10,2), ts timestamp)");
      }
      c.setAutoCommit(false);
      c.setTransactionIsolation(Connection.TRANSACTION_SERIALIZABLE);
      try (PreparedStatement p = c.prepareStatement("INSERT INTO j VALUES (?, ?, ?, ?)")) {
        for (int i = 1; i <= 300; i++) {
          p.setInt(1, i); p.setString(2, "n" + i); p.setBigDecimal(3, new BigDecimal("1.005").multiply(BigDecimal.valueOf(i)));
          p.setTimestamp(4, new Timestamp(1700000000000L + i)); p.addBatch();
        }
        p.executeBatch();
      }
      c.commit();
      long sum = 0;
      try (PreparedStatement p = c.prepareStatement("SELECT id, name, amt, ts FROM j WHERE id = ?")) {
        for (int i = 1; i <= 20; i++) {
          p.setInt(1, i);
          try (ResultSet r = p.executeQuery()) { r.next(); sum += r.getInt(1); if (i == 20) System.out.println(r.getString(2) + " " + r.getBigDecimal(3) + " " + r.getTimestamp(4)); }
        }
      }
      c.commit();
      try (PreparedStatement p = c.prepareStatement("UPDATE j SET amt = amt + ? WHERE id = ?")) {
        p.setBigDecimal(1, new BigDecimal("0.5")); p.setInt(2, 1); System.out.println("updated " + p.executeUpdate());
      }
      c.commit();
      System.out.println("sum " + sum);
      try (Statement s = c.createStatement(); ResultSet r = s.executeQuery("SELECT count(*), sum(amt) FROM j")) { r.next(); System.out.println("count " + r.getLong(1) + " total " + r.getBigDecimal(2)); }
      c.commit();
      try (Statement s = c.createStatement()) {
        s.execute("CREATE TABLE g (id serial PRIMARY KEY, k bigint GENERATED ALWAYS AS IDENTITY, v text)");
      }
      c.commit();
      try (PreparedStatement p = c.prepareStatement("INSERT INTO g (v) VALUES (?)", Statement.RETURN_GENERATED_KEYS)) {
        for (String v : new String[] {"x", "y"}) {
          p.setString(1, v); p.executeUpdate();
          try (ResultSet r = p.getGeneratedKeys()) { r.next(); System.out.println("keys " + r.getInt("id") + " " + r.getLong("k") + " " + r.getString("v")); }
        }
      }
      c.commit();
      try (ResultSet r = c.getMetaData().getColumns(null, "public", "g", null)) {
        while (r.next()) System.out.println("column " + r.getString("COLUMN_NAME") + " " + r.getString("TYPE_NAME") + " autoincrement=" + r.getString("IS_AUTOINCREMENT") + " default=" + r.getString("COLUMN_DEF"));
      }
      c.commit();
      try (Statement s = c.createStatement()) {
        s.execute("CREATE TABLE tz (id int PRIMARY KEY, at timestamptz, took interval)");
      }
      c.commit();
      try (PreparedStatement p = c.prepareStatement("INSERT INTO tz VALUES (?, ?, ?::interval)")) {
        p.setInt(1, 1); p.setObject(2, java.time.OffsetDateTime.parse("2024-07-01T12:00:00.25+05:30")); p.setString(3, "1 day 02:00:00"); p.executeUpdate();
      }
      c.commit();
      try (Statement s = c.createStatement(); ResultSet r = s.executeQuery("SELECT at, took, at + took FROM tz")) {
        r.next(); System.out.println("tz " + r.getObject(1, java.time.OffsetDateTime.class) + " " + r.getString(2) + " " + r.getObject(3, java.time.OffsetDateTime.class));
      }
      c.commit();
      c.setAutoCommit(true); // pgjdbc prepares afresh only outside a transaction (no autosave)
      try (PreparedStatement p = c.prepareStatement("SELECT * FROM tz WHERE id = ?")) {
        for (int i = 0; i < 6; i++) { p.setInt(1, 1); try (ResultSet r = p.executeQuery()) { r.next(); } }
        try (Statement s = c.createStatement()) { s.execute("ALTER TABLE tz ADD COLUMN note text DEFAULT 'n'"); }
        p.setInt(1, 1);
        try (ResultSet r = p.executeQuery()) { r.next(); System.out.println("healed " + r.getMetaData().getColumnCount() + " " + r.getString(4)); }
      }
      c.setAutoCommit(false);
      try (Statement s = c.createStatement()) {
        s.executeUpdate("INSERT INTO j (id, name) VALUES (1001, 'kept')");
        Savepoint sp = c.setSavepoint();
        s.executeUpdate("INSERT INTO j (id, name) VALUES (1002, 'undone')");
        c.rollback(sp);
        s.executeUpdate("INSERT INTO j (id, name) VALUES (1003, 'kept')");
        c.commit();
      }
    }
    try (Connection c = DriverManager.getConnection(url + "&autosave=always")) {
      c.setAutoCommit(false);
      try (PreparedStatement p = c.prepareStatement("INSERT INTO j (id, name) VALUES (?, 'auto')")) {
        for (int id : new int[] {1004, 1, 1005}) {
          p.setInt(1, id);
          try { p.executeUpdate(); } catch (SQLException e) { System.out.println("autosave caught " + e.getSQLState()); }
        }
      }
      c.commit();
      try (Statement s = c.createStatement(); ResultSet r = s.executeQuery("SELECT string_agg(id || ' ' || name, ', ' ORDER BY id) FROM j WHERE id > 1000")) {
        r.next(); System.out.println("savepoints " + r.getString(1));
      }
      c.commit();
    }
  }
}
