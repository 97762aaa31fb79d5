// Driven by tests/compat/jdbc.rs: jsonb through pgjdbc the three ways applications bind it —
// a PGobject of type jsonb (sent with the jsonb OID), a String with `?::jsonb`, and a String
// on a connection with stringtype=unspecified (sent untyped) — then read back with getString
// and getObject (a PGobject whose type is jsonb), the column's type name, operators with
// parameters in server-side prepared statements, and the error of a String bound as varchar
// to a jsonb column without a cast. Prints lines the test checks.
import java.sql.*;
import org.postgresql.util.PGobject;
public class JdbcJsonb {
  static PGobject jsonb(String v) throws SQLException {
    PGobject o = new PGobject(); o.setType("jsonb"); o.setValue(v); return o;
  }
  public static void main(String[] a) throws Exception {
    String base = "jdbc:postgresql://127.0.0.1:" + a[0] + "/postgres?user=postgres&sslmode=disable&prepareThreshold=1";
    try (Connection c = DriverManager.getConnection(base)) {
      try (Statement s = c.createStatement()) {
        s.execute("CREATE TABLE jj (id int PRIMARY KEY, doc jsonb)");
      }
      try (PreparedStatement p = c.prepareStatement("INSERT INTO jj VALUES (?, ?)")) {
        p.setInt(1, 1); p.setObject(2, jsonb("{\"name\": \"ann\", \"tags\": [\"a\", \"b\"], \"n\": 1.50}")); p.executeUpdate();
        p.setInt(1, 2); p.setObject(2, null, Types.OTHER); p.executeUpdate();
      }
      try (PreparedStatement p = c.prepareStatement("INSERT INTO jj VALUES (?, ?::jsonb)")) {
        p.setInt(1, 3); p.setString(2, "[1, {\"x\": null}]"); p.executeUpdate();
      }
      try (PreparedStatement p = c.prepareStatement("INSERT INTO jj VALUES (?, ?)")) {
        p.setInt(1, 4); p.setString(2, "{}"); p.executeUpdate();
        System.out.println("varchar accepted");
      } catch (SQLException e) {
        System.out.println("varchar refused " + e.getSQLState());
      }
      for (int round = 0; round < 3; round++) {
        try (PreparedStatement p = c.prepareStatement("SELECT id, doc, doc ->> ?, doc @> ? FROM jj WHERE doc IS NOT NULL ORDER BY id")) {
          p.setString(1, "name"); p.setObject(2, jsonb("{\"tags\": [\"b\"]}"));
          try (ResultSet r = p.executeQuery()) {
            if (round == 0) System.out.println("type " + r.getMetaData().getColumnTypeName(2));
            while (r.next()) {
              Object o = r.getObject(2);
              String kind = o instanceof PGobject ? ((PGobject) o).getType() : o.getClass().getSimpleName();
              if (round == 2) System.out.println(r.getInt(1) + " " + r.getString(2) + " " + kind + " " + r.getString(3) + " " + r.getBoolean(4));
            }
          }
        }
      }
    }
    try (Connection c = DriverManager.getConnection(base + "&stringtype=unspecified");
         PreparedStatement p = c.prepareStatement("INSERT INTO jj VALUES (?, ?)")) {
      p.setInt(1, 5); p.setString(2, "{\"b\": 2, \"a\": 1}"); p.executeUpdate();
      try (Statement s = c.createStatement(); ResultSet r = s.executeQuery("SELECT doc FROM jj WHERE id = 5")) {
        r.next(); System.out.println("unspecified " + r.getString(1));
      }
    }
  }
}
