// Driven by tests/compat/jdbc.rs: arrays through pgjdbc the ways applications bind them —
// Connection.createArrayOf (sent as text with the array's OID), a Java int[] / String[] /
// long[] with setObject (pgjdbc's binary array encoding for primitives), `= ANY (?)` with an
// array parameter in a server-side prepared statement, NULL elements — then read back with
// getArray (the element objects), getString and the column's type name and
// ResultSetMetaData. Prints lines the test checks.
import java.sql.*;
import java.util.Arrays;
public class JdbcArrays {
  public static void main(String[] a) throws Exception {
    String base = "jdbc:postgresql://127.0.0.1:" + a[0] + "/postgres?user=postgres&sslmode=disable&prepareThreshold=1";
    try (Connection c = DriverManager.getConnection(base)) {
      try (Statement s = c.createStatement()) {
        s.execute("CREATE TABLE ja (id int PRIMARY KEY, tags text[], nums bigint[], flags boolean[])");
      }
      try (PreparedStatement p = c.prepareStatement("INSERT INTO ja VALUES (?, ?, ?, ?)")) {
        p.setInt(1, 1);
        p.setArray(2, c.createArrayOf("text", new String[] {"a", "b c", null, "d\"e"}));
        p.setArray(3, c.createArrayOf("int8", new Long[] {1L, null, 3L}));
        p.setArray(4, c.createArrayOf("bool", new Boolean[] {true, false}));
        p.executeUpdate();
        p.setInt(1, 2);
        p.setObject(2, new String[] {"x"});
        p.setObject(3, new long[] {10L, 20L});
        p.setObject(4, new boolean[] {});
        p.executeUpdate();
        p.setInt(1, 3);
        p.setNull(2, Types.ARRAY);
        p.setObject(3, new long[] {});
        p.setNull(4, Types.ARRAY);
        p.executeUpdate();
      }
      for (int round = 0; round < 3; round++) {
        try (PreparedStatement p = c.prepareStatement("SELECT id, tags, nums, flags, cardinality(nums) FROM ja WHERE id = ANY (?) ORDER BY id")) {
          p.setArray(1, c.createArrayOf("int4", new Integer[] {1, 2, 3}));
          try (ResultSet r = p.executeQuery()) {
            if (round == 0) {
              ResultSetMetaData m = r.getMetaData();
              System.out.println("types " + m.getColumnTypeName(2) + " " + m.getColumnTypeName(3) + " " + m.getColumnTypeName(4) + " " + m.getColumnType(2));
            }
            while (r.next()) {
              if (round != 2) continue;
              Array tags = r.getArray(2);
              Array nums = r.getArray(3);
              String t = tags == null ? "null" : Arrays.toString((Object[]) tags.getArray());
              String n = nums == null ? "null" : Arrays.toString((Object[]) nums.getArray()) + " " + nums.getBaseTypeName();
              System.out.println(r.getInt(1) + " " + t + " " + n + " " + r.getString(4) + " " + r.getString(5));
            }
          }
        }
      }
      try (PreparedStatement p = c.prepareStatement("SELECT id FROM ja WHERE ? = ANY (tags) OR nums @> ? ORDER BY id")) {
        p.setString(1, "b c");
        p.setObject(2, new long[] {20L});
        try (ResultSet r = p.executeQuery()) {
          StringBuilder ids = new StringBuilder("matches");
          while (r.next()) ids.append(' ').append(r.getInt(1));
          System.out.println(ids);
        }
      }
      try (PreparedStatement p = c.prepareStatement("UPDATE ja SET tags = array_append(tags, ?) WHERE id = ?")) {
        p.setString(1, "y"); p.setInt(2, 2); p.executeUpdate();
      }
      try (Statement s = c.createStatement(); ResultSet r = s.executeQuery("SELECT tags, array_to_string(tags, '|') FROM ja WHERE id = 2")) {
        r.next(); System.out.println("appended " + r.getString(1) + " " + r.getString(2));
      }
    }
  }
}
